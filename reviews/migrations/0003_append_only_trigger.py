"""Make review decisions append-only at the database too: UPDATE and DELETE raise.

PostgreSQL gets a trigger function; SQLite gets BEFORE UPDATE/DELETE triggers. Tests that need
to tamper with a row (to prove the audit chain catches it) disable the trigger explicitly.
"""

from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION reviews_decision_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'review decisions are append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER reviews_decision_no_update BEFORE UPDATE OR DELETE ON reviews_reviewdecision
    FOR EACH ROW EXECUTE FUNCTION reviews_decision_append_only();
"""
PG_BACKWARD = """
DROP TRIGGER IF EXISTS reviews_decision_no_update ON reviews_reviewdecision;
DROP FUNCTION IF EXISTS reviews_decision_append_only();
"""
SQLITE_FORWARD = [
    """CREATE TRIGGER reviews_decision_no_update BEFORE UPDATE ON reviews_reviewdecision
       BEGIN SELECT RAISE(ABORT, 'review decisions are append-only (UPDATE refused)'); END;""",
    """CREATE TRIGGER reviews_decision_no_delete BEFORE DELETE ON reviews_reviewdecision
       BEGIN SELECT RAISE(ABORT, 'review decisions are append-only (DELETE refused)'); END;""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS reviews_decision_no_update;",
    "DROP TRIGGER IF EXISTS reviews_decision_no_delete;",
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
    dependencies = [("reviews", "0002_role_groups")]
    operations = [migrations.RunPython(forward, backward)]
