"""Lift the database's append-only guard on review decisions, for tests only.

Migration 0003 installs triggers that refuse UPDATE and DELETE on reviews_reviewdecision. A
test that proves the audit chain catches tampering must first get past them, exactly as an
attacker with database-owner rights would; this context manager does that and puts the guard
back afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

SQLITE_TRIGGERS = [
    """CREATE TRIGGER IF NOT EXISTS reviews_decision_no_update BEFORE UPDATE ON reviews_reviewdecision
       BEGIN SELECT RAISE(ABORT, 'review decisions are append-only (UPDATE refused)'); END;""",
    """CREATE TRIGGER IF NOT EXISTS reviews_decision_no_delete BEFORE DELETE ON reviews_reviewdecision
       BEGIN SELECT RAISE(ABORT, 'review decisions are append-only (DELETE refused)'); END;""",
]


@contextmanager
def append_only_guard_disabled() -> Iterator[None]:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Deferred foreign-key checks of rows inserted in this transaction must fire first:
            # PostgreSQL refuses ALTER TABLE while trigger events are pending.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("ALTER TABLE reviews_reviewdecision DISABLE TRIGGER reviews_decision_no_update")
        elif connection.vendor == "sqlite":
            cursor.execute("DROP TRIGGER IF EXISTS reviews_decision_no_update")
            cursor.execute("DROP TRIGGER IF EXISTS reviews_decision_no_delete")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("ALTER TABLE reviews_reviewdecision ENABLE TRIGGER reviews_decision_no_update")
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")
            elif connection.vendor == "sqlite":
                for statement in SQLITE_TRIGGERS:
                    cursor.execute(statement)
