"""The database guards the evidence a decision judged, and refuses TRUNCATE of the audit trail.

- PostgreSQL: TRUNCATE of review decisions (a statement trigger: TRUNCATE fires no row trigger, so
  0003's guard never saw it) and of explanations is refused.
- Both databases: once a message has a decision, its text (`body`, `body_sha256`) takes no
  UPDATE, and its explanations (the words and scores the reviewer saw) no UPDATE or DELETE.

reviews.triggers keeps the current definitions and re-creates missing SQLite triggers after each
migrate (SQLite drops a table's triggers when Django rebuilds the table).
"""

from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION reviews_no_truncate() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% holds the audit trail and cannot be truncated (TRUNCATE refused)', TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER reviews_decision_no_truncate BEFORE TRUNCATE ON reviews_reviewdecision
    FOR EACH STATEMENT EXECUTE FUNCTION reviews_no_truncate();
CREATE TRIGGER reviews_explanation_no_truncate BEFORE TRUNCATE ON explanations_explanation
    FOR EACH STATEMENT EXECUTE FUNCTION reviews_no_truncate();

CREATE OR REPLACE FUNCTION reviews_message_text_frozen() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.id) THEN
        RAISE EXCEPTION 'the text of a reviewed message is immutable (UPDATE refused)'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER reviews_message_text_frozen BEFORE UPDATE OF body, body_sha256 ON scoring_message
    FOR EACH ROW WHEN (NEW.body IS DISTINCT FROM OLD.body OR NEW.body_sha256 IS DISTINCT FROM OLD.body_sha256)
    EXECUTE FUNCTION reviews_message_text_frozen();

CREATE OR REPLACE FUNCTION reviews_explanation_frozen() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.message_id) THEN
        RAISE EXCEPTION 'the explanation of a reviewed message is immutable (% refused)', TG_OP
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER reviews_explanation_frozen BEFORE UPDATE OR DELETE ON explanations_explanation
    FOR EACH ROW EXECUTE FUNCTION reviews_explanation_frozen();
"""
PG_BACKWARD = """
DROP TRIGGER IF EXISTS reviews_explanation_frozen ON explanations_explanation;
DROP FUNCTION IF EXISTS reviews_explanation_frozen();
DROP TRIGGER IF EXISTS reviews_message_text_frozen ON scoring_message;
DROP FUNCTION IF EXISTS reviews_message_text_frozen();
DROP TRIGGER IF EXISTS reviews_explanation_no_truncate ON explanations_explanation;
DROP TRIGGER IF EXISTS reviews_decision_no_truncate ON reviews_reviewdecision;
DROP FUNCTION IF EXISTS reviews_no_truncate();
"""
SQLITE_FORWARD = [
    """CREATE TRIGGER reviews_message_text_frozen BEFORE UPDATE OF body, body_sha256 ON scoring_message
       WHEN (NEW.body IS NOT OLD.body OR NEW.body_sha256 IS NOT OLD.body_sha256)
           AND EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.id)
       BEGIN SELECT RAISE(ABORT, 'the text of a reviewed message is immutable (UPDATE refused)'); END;""",
    """CREATE TRIGGER reviews_explanation_frozen_update BEFORE UPDATE ON explanations_explanation
       WHEN EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.message_id)
       BEGIN SELECT RAISE(ABORT, 'the explanation of a reviewed message is immutable (UPDATE refused)'); END;""",
    """CREATE TRIGGER reviews_explanation_frozen_delete BEFORE DELETE ON explanations_explanation
       WHEN EXISTS (SELECT 1 FROM reviews_reviewdecision WHERE message_id = OLD.message_id)
       BEGIN SELECT RAISE(ABORT, 'the explanation of a reviewed message is immutable (DELETE refused)'); END;""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS reviews_message_text_frozen;",
    "DROP TRIGGER IF EXISTS reviews_explanation_frozen_update;",
    "DROP TRIGGER IF EXISTS reviews_explanation_frozen_delete;",
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FORWARD, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_FORWARD:
            schema_editor.execute(statement)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE_BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0003_append_only_trigger"),
        ("explanations", "0001_initial"),
        ("scoring", "0001_initial"),
    ]
    operations = [migrations.RunPython(forward, backward)]
