# Claimwatch: `make run` serves the whole thing at http://127.0.0.1:8000, `make test` tests it.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Every target here is development: the settings default to production (DEBUG off, SECRET_KEY and
# QA_SAMPLE_SALT required), so make turns DEBUG on unless the environment says otherwise.
export DEBUG ?= 1

.PHONY: run test test-fast lint format install migrate model worker beat web demo clean-var

$(STAMP): requirements.txt requirements-dev.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 ($(PYTHON)) is required"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

migrate: $(STAMP)
	$(PY) manage.py migrate --noinput

# Trains (with a progress bar) and activates a classifier only when no version is active.
model: migrate
	$(PY) manage.py ensure_model

# On an empty database, `make run` first simulates two weeks of traffic with drift through the
# real pipeline (about a minute on a 2-core CPU), so the records and the monitoring charts have data.
# DEMO=0 make run skips it.
DEMO ?= 1
demo: model
	$(PY) manage.py simulate_traffic --demo --if-empty

run: model
	@if [ "$(DEMO)" != "0" ]; then $(PY) manage.py simulate_traffic --demo --if-empty; fi
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(VENV)/bin/honcho -f Procfile.dev start

# The whole suite, in two runs: everything but the real model's and the browser tests in
# TEST_WORKERS processes (pytest-xdist, one torch thread each); then, in one process with every
# core, the real model's tests (training it is most of the suite's CPU time) and after them the
# browser tests (one Chromium, Django's async-safety check off while it lives: they run last, see
# tests/conftest.py, where the marks are). One process for both saves a start-up and a test
# database. --durations: the slowest tests of each run (CI's log included) say where the time goes.
# Both targets keep compiled modules (__pycache__/, git-ignored) where the environment sets
# PYTHONDONTWRITEBYTECODE: without them every pytest process compiles the project and rewrites the
# assertions of every test module and plugin again (collection 21.8 s -> 15.2 s a process here).
TEST_WORKERS ?= 2
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest
test: $(STAMP)
	$(PYTEST) -n $(TEST_WORKERS) -m "not browser and not trained_model" --durations=30
	$(PYTEST) -m "trained_model or browser" --durations=20

# The development loop: everything but the browser tests, the tests that train or load the real
# model and the API contract's generated feeds (markers `browser` and `slow`), in TEST_WORKERS
# processes. `make test` stays the whole suite, and is what CI runs.
test-fast: $(STAMP)
	$(PYTEST) -n $(TEST_WORKERS) -m "not slow and not browser" -q

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .
