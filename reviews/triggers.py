"""The database's share of the audit trail's guards, as they stand now (the migrations that first
installed them, 0003 and 0004, keep their own frozen copies):

- review decisions: no UPDATE, no DELETE (0003), and on PostgreSQL no TRUNCATE (0004);
- the evidence of a reviewed message (one with a decision): its text (`body`, `body_sha256`)
  takes no UPDATE, and its explanations take no UPDATE or DELETE; on PostgreSQL the explanation
  table takes no TRUNCATE either (0004).

SQLite drops a table's triggers when Django rebuilds the table for a schema change (its
ALTER TABLE cannot change most things in place), and other apps' migrations rebuild
scoring_message and explanations_explanation now and then. So after every `migrate` the reviews
app creates any of these SQLite triggers that is missing (`sqlite_triggers_ensure`, a
post_migrate receiver). PostgreSQL keeps triggers across ALTER TABLE.
"""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper

SQLITE_TRIGGERS: dict[str, str] = {
    "reviews_decision_no_update": """
        CREATE TRIGGER IF NOT EXISTS reviews_decision_no_update BEFORE UPDATE ON reviews_reviewdecision
        BEGIN SELECT RAISE(ABORT, 'review decisions are append-only (UPDATE refused)'); END;""",
    "reviews_decision_no_delete": """
        CREATE TRIGGER IF NOT EXISTS reviews_decision_no_delete BEFORE DELETE ON reviews_reviewdecision
        BEGIN SELECT RAISE(ABORT, 'review decisions are append-only (DELETE refused)'); END;""",
    "reviews_message_text_frozen": """
        CREATE TRIGGER IF NOT EXISTS reviews_message_text_frozen
        BEFORE UPDATE OF body, body_sha256 ON scoring_message
        WHEN (NEW.body IS NOT OLD.body OR NEW.body_sha256 IS NOT OLD.body_sha256)
            AND EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.id)
        BEGIN SELECT RAISE(ABORT, 'the text of a reviewed message is immutable (UPDATE refused)'); END;""",
    "reviews_explanation_frozen_update": """
        CREATE TRIGGER IF NOT EXISTS reviews_explanation_frozen_update
        BEFORE UPDATE ON explanations_explanation
        WHEN EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.message_id)
        BEGIN SELECT RAISE(ABORT, 'the explanation of a reviewed message is immutable (UPDATE refused)');
        END;""",
    "reviews_explanation_frozen_delete": """
        CREATE TRIGGER IF NOT EXISTS reviews_explanation_frozen_delete
        BEFORE DELETE ON explanations_explanation
        WHEN EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.message_id)
        BEGIN SELECT RAISE(ABORT, 'the explanation of a reviewed message is immutable (DELETE refused)');
        END;""",
}

# On PostgreSQL (installed by migrations 0003 and 0004; listed for the check below).
POSTGRESQL_TRIGGERS: dict[str, str] = {
    "reviews_decision_no_update": "reviews_reviewdecision",
    "reviews_decision_no_truncate": "reviews_reviewdecision",
    "reviews_message_text_frozen": "scoring_message",
    "reviews_explanation_frozen": "explanations_explanation",
    "reviews_explanation_no_truncate": "explanations_explanation",
}


def sqlite_triggers_ensure(connection: BaseDatabaseWrapper) -> None:
    """Create whichever of the SQLite guards is missing (idempotent; nothing on other databases)."""
    if connection.vendor != "sqlite":
        return
    tables = set(connection.introspection.table_names())
    needed = {"reviews_reviewdecision", "scoring_message", "explanations_explanation"}
    if not needed <= tables:
        return  # a migration run that stopped before these tables exist
    with connection.cursor() as cursor:
        for statement in SQLITE_TRIGGERS.values():
            cursor.execute(statement)


def installed_triggers(connection: BaseDatabaseWrapper) -> set[str]:
    """Names of the guards this database has now."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        elif connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        else:
            return set()
        names = {row[0] for row in cursor.fetchall()}
    expected = SQLITE_TRIGGERS if connection.vendor == "sqlite" else POSTGRESQL_TRIGGERS
    return names & set(expected)
