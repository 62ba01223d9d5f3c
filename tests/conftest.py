"""Shared fixtures: the personas of the brief's role table, and service availability."""

from __future__ import annotations

import os

import pytest

from core.roles import Role
from tests.factories import UserFactory

PASSWORD = "correct-horse-battery-staple"
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under pytest-xdist (make test-fast) each process gets one core's worth of threads: two
    # processes of two torch threads each on a 2-core CPU made the model tests 5-10x slower.
    # The variables reach the workers' subprocesses too (celery workers, commands).
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The local-memory cache lives as long as the test process: no test sees another's keys
    (a pending-gather marker, a rate limit)."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True, scope="session")
def _flush_past_truncate_guards():
    """Transactional tests end with a flush, a TRUNCATE on PostgreSQL, which the audit trail's
    guards refuse (reviews migration 0004): the flush, and only it, runs with triggers off."""
    from tests.support.db_guard import flush_past_truncate_guards

    flush_past_truncate_guards()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Personas are created per test, and PBKDF2 at production strength (a million iterations)
    takes about 0.3 s a password here: in tests, passwords are hashed with MD5. Production keeps
    Django's default hashers (compliance_site.settings sets none)."""
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS


@pytest.fixture(autouse=True)
def _private_checkpoint_log(settings, tmp_path):
    """Each test has a checkpoint log of its own (reviews.checkpoint_store), never var/'s."""
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "audit-checkpoints"


@pytest.fixture
def reviewer(db):
    return UserFactory(username="rita_reviewer", role=Role.REVIEWER)


@pytest.fixture
def second_reviewer(db):
    return UserFactory(username="rob_reviewer", role=Role.REVIEWER)


@pytest.fixture
def auditor(db):
    return UserFactory(username="ada_auditor", role=Role.AUDITOR)


@pytest.fixture
def admin_user(db):
    return UserFactory(username="carl_admin", role=Role.COMPLIANCE_ADMIN)


@pytest.fixture
def service_account(db):
    return UserFactory(username="ingest_bot", role=Role.INGEST_SERVICE)


@pytest.fixture
def outsider(db):
    return UserFactory(username="oscar_outsider")


def require_or_skip(available: bool, what: str, env_flag: str) -> None:
    """Skip when a local service is missing, unless CI demands it (then fail loudly)."""
    if available:
        return
    if os.environ.get(env_flag) == "1":
        pytest.fail(f"{what} is required here ({env_flag}=1) but is not available")
    pytest.skip(f"{what} is not available")


@pytest.fixture
def seeded_transactional_db(django_db_serialized_rollback, transactional_db):
    """A transactional database that still holds what data migrations seeded (claim types, role
    groups, rules). Every transactional test must use serialized rollback: mixing it with plain
    flushes makes Django re-create content types twice."""
    return transactional_db


# One Chromium for the whole run (tests/support/browser.py); the `browser` tests run last.
# Model fixtures (tests/support/models.py): tiny_model_version and trained_model_version give a
# registered, active ModelVersion; the *_artifact fixtures give the artifact folder.
from tests.support.browser import browser  # noqa: E402, F401
from tests.support.models import (  # noqa: E402, F401
    tiny_model_artifact,
    tiny_model_version,
    tiny_one_epoch_training,
    tiny_training_inputs,
    trained_model_artifact,
    trained_model_version,
)

# The first test that uses the real trained model trains it inside its own timeout, whichever
# test that is: those tests get that time on top of the default (pyproject's `timeout`). Training
# takes 9 minutes on a 2-core CPU with bf16 units and 12 on one with AVX2 only (float32), more on a
# busy machine: a CI run on an AVX2 host whose cores were shared timed out at 900 s of allowance.
# A test that sets its own timeout keeps it.
TRAINING_ALLOWANCE_S = 1500


@pytest.hookimpl(wrapper=True, tryfirst=True)  # marks before `-m` deselects, order after all
def pytest_collection_modifyitems(config, items):
    # The browser tests run after all the others, in their collected order: the session's one
    # Chromium (tests/support/browser.py) switches Django's async-safety check off while it lives,
    # and no other test may run with it off. `make test` runs them last in the real model's run
    # (-m "trained_model or browser"), so every test that uses the fixture carries the mark. They
    # are moved after the other hooks ran (pytest-django puts the tests without a database, such
    # as test_quality's, after the transactional ones, the browser tests among those).
    in_browser = [i for i in items if i.get_closest_marker("browser") or "browser" in i.fixturenames]
    for item in in_browser:
        item.add_marker(pytest.mark.browser)
    # The tests of the real trained model: `make test` runs them in one process with every core
    # (training it is most of the suite's CPU time), the rest in parallel before them.
    default = int(float(config.getini("timeout") or 0))
    for item in items:
        if "trained_model_artifact" not in item.fixturenames:
            continue
        item.add_marker(pytest.mark.trained_model)
        if default and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(default + TRAINING_ALLOWANCE_S))
    yield
    browser_last = [i for i in items if i.get_closest_marker("browser")]
    items[:] = [i for i in items if not i.get_closest_marker("browser")] + browser_last
