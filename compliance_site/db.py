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
