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


EVIDENCE_TRIGGERS_PG = {
    "scoring_message": "reviews_message_text_frozen",
    "explanations_explanation": "reviews_explanation_frozen",
}


@contextmanager
def evidence_guard_disabled() -> Iterator[None]:
    """Lift migration 0004's guards on a reviewed message's text and explanations (as a database
    owner could), and put them back afterwards."""
    from reviews.triggers import sqlite_triggers_ensure

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            for table, trigger in EVIDENCE_TRIGGERS_PG.items():
                cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
        elif connection.vendor == "sqlite":
            for name in (
                "reviews_message_text_frozen",
                "reviews_explanation_frozen_update",
                "reviews_explanation_frozen_delete",
            ):
                cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                for table, trigger in EVIDENCE_TRIGGERS_PG.items():
                    cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {trigger}")
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        sqlite_triggers_ensure(connection)


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


def flush_past_truncate_guards() -> None:
    """Let the test runner's flush (TRUNCATE of every table, PostgreSQL) pass the TRUNCATE guards
    of migration 0004: its statements run with triggers off (session_replication_role = replica,
    for that transaction only; the test database's user is a superuser). Nothing else changes:
    a test's own TRUNCATE still meets the guard."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    if getattr(DatabaseOperations.execute_sql_flush, "_past_truncate_guards", False):
        return
    original = DatabaseOperations.execute_sql_flush

    def execute_sql_flush(self, sql_list):
        return original(self, ["SET LOCAL session_replication_role = replica", *sql_list])

    execute_sql_flush._past_truncate_guards = True
    DatabaseOperations.execute_sql_flush = execute_sql_flush
