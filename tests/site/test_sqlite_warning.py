"""The default deployment (SQLite, `make run`) says, when its web process starts, what SQLite
does not guarantee for several reviewers; PostgreSQL says nothing."""

from __future__ import annotations

import importlib
import logging
from unittest import mock

import pytest
from django.test import override_settings

from core.db import sqlite_concurrency_warning

SQLITE = {"ENGINE": "django.db.backends.sqlite3", "NAME": "/srv/var/claimwatch.sqlite3"}
POSTGRES = {"ENGINE": "django.db.backends.postgresql", "NAME": "claimwatch"}


def test_sqlite_gets_a_warning_that_names_what_it_does_not_guarantee():
    warning = sqlite_concurrency_warning(SQLITE)
    assert "/srv/var/claimwatch.sqlite3" in warning
    assert "one write at a time" in warning and "database is locked" in warning
    assert "PostgreSQL" in warning


def test_postgresql_gets_no_warning():
    assert sqlite_concurrency_warning(POSTGRES) is None


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_the_web_process_logs_the_warning_when_it_starts_on_sqlite():
    import compliance_site.wsgi

    # (django.setup() in the WSGI module configures logging again, so the logger is watched
    # directly rather than through pytest's log capture)
    logger = logging.getLogger("compliance_site")
    with override_settings(DATABASES={"default": SQLITE}), mock.patch.object(logger, "warning") as warn:
        importlib.reload(compliance_site.wsgi)  # what runserver and gunicorn do once per process
    warn.assert_called_once()
    assert "running on SQLite" in warn.call_args.args[0]
