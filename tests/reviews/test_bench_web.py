import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

KEYS = {
    "queue_p50_ms",
    "queue_p95_ms",
    "message_p50_ms",
    "message_p95_ms",
    "records_p50_ms",
    "records_p95_ms",
    "csv_first_byte_ms",
    "csv_first_byte_p50_ms",
}


@pytest.mark.django_db
def test_bench_web_refuses_sqlite_with_a_clear_message():
    if connection.vendor != "sqlite":
        pytest.skip("this database is not SQLite")
    with pytest.raises(CommandError, match="measures the production database"):
        call_command("bench_web", "--json")


@pytest.mark.django_db
@pytest.mark.parametrize("args", [["--messages", "10"], ["--decisions", "0"], ["--requests", "1"]])
def test_bench_web_refuses_sizes_it_cannot_measure(args):
    if connection.vendor != "postgresql":
        pytest.skip("bench_web runs on PostgreSQL only")
    with pytest.raises(CommandError, match="Need --messages"):
        call_command("bench_web", *args)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_bench_web_seeds_a_scratch_schema_times_every_page_and_drops_it():
    if connection.vendor != "postgresql":
        pytest.skip("bench_web runs on PostgreSQL only")
    out = io.StringIO()
    call_command(
        "bench_web", "--json", "--messages", "300", "--decisions", "120", "--requests", "5", stdout=out
    )
    result = json.loads(out.getvalue())
    assert result.keys() >= KEYS
    assert all(result[key] > 0 for key in KEYS)
    assert result["csv_one_reviewer_rows"] == 12  # 120 decisions over 10 reviewers
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", [result["schema"]])
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT current_schemas(false)")
        assert result["schema"] not in cursor.fetchone()[0]
