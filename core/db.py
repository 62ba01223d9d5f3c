"""Database helpers shared by the apps."""

from __future__ import annotations

from django.db import connections
from django.db.models import QuerySet


def skip_locked(query: QuerySet) -> QuerySet:
    """`query` locking its own rows FOR UPDATE, skipping rows another transaction holds, so two
    workers never wait for or take the same rows. Unchanged where the database has no SKIP
    LOCKED (SQLite: its transactions start IMMEDIATE here, one writer at a time)."""
    if connections[query.db].features.has_select_for_update_skip_locked:
        return query.select_for_update(skip_locked=True, of=("self",))
    return query


SQLITE_ENGINE = "django.db.backends.sqlite3"


def sqlite_concurrency_warning(database: dict) -> str | None:
    """What a deployment on SQLite must know before several reviewers use it (None on any other
    database). The web process logs it when it starts (compliance_site.wsgi: `make run`'s
    runserver and any WSGI server); the README's "What SQLite does not guarantee" says more."""
    if database.get("ENGINE") != SQLITE_ENGINE:
        return None
    return (
        f"Claimwatch is running on SQLite ({database.get('NAME')}), which is for trying it out on "
        "one machine, not for a team of reviewers: it takes one write at a time, so reviewers' "
        "claims and decisions, ingest and scoring queue behind each other and a write that waits "
        "more than 30 s fails ('database is locked'); it has no row locks and no database roles, "
        "and whoever can write the file can rewrite the audit trail and its triggers. For several "
        "reviewers set DATABASE_URL to PostgreSQL (README: 'What SQLite does not guarantee')."
    )
