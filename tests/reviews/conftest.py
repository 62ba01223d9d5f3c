"""Fixtures of the review tests: signed-in clients per persona and a way to clean up
append-only rows after tests that commit for real (live server, threads)."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.test import Client

from reviews.models import ReviewDecision
from tests.support.db_guard import append_only_guard_disabled


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def reviewer_client(reviewer):
    return signed_in(reviewer)


@pytest.fixture
def second_reviewer_client(second_reviewer):
    return signed_in(second_reviewer)


@pytest.fixture
def auditor_client(auditor):
    return signed_in(auditor)


@pytest.fixture
def admin_client_(admin_user):
    return signed_in(admin_user)


def reseed_reference_data() -> None:
    """Run the data migrations' seed functions again (they are idempotent): role groups and
    claim types. A flush after a committing test empties every table; serialized rollback puts
    the rows back when the test asks for it, and this makes sure of it either way."""
    for module, function in (
        ("scoring.migrations.0002_claim_types", "seed"),
        ("reviews.migrations.0002_role_groups", "create_groups"),
    ):
        getattr(import_module(module), function)(django_apps, None)


@pytest.fixture
def committed_decisions(django_db_serialized_rollback, transactional_db):
    """For tests that really commit (live server, threads): the reference rows are there, and
    decisions, which refuse DELETE, are removed on SQLite with the guard lifted before the
    flush (PostgreSQL truncates)."""
    reseed_reference_data()
    yield
    if connection.vendor == "sqlite":
        with append_only_guard_disabled():
            ReviewDecision.objects.all()._raw_delete(ReviewDecision.objects.db)
