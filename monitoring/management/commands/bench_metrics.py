"""python manage.py bench_metrics [--json] [--messages 1000000] [--decisions 200000] [--requests 5]

Server time of every /api/metrics/ endpoint at size, on PostgreSQL only. Seeds (monitoring.bench)
1,000,000 messages with their routing predictions and 200,000 review decisions by bulk SQL into
the real tables of a scratch schema, migrated from scratch and dropped at the end, so real data is
never touched. After VACUUM ANALYZE it builds the daily roll-up once (timed: rollup_build_ms),
then requests each endpoint through Django's test client in this process (full middleware, DRF,
JSON rendering; no network): one warm-up and --requests timed requests each, with period=day
and the active model version (each request also runs the roll-up's change check). Keys: one
<endpoint>_ms (median) per endpoint and slowest_endpoint_ms. Target: every median <= 500 ms.
"""

from __future__ import annotations

import json
import secrets
import statistics
import time
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from tqdm import tqdm

from monitoring.api_urls import ENDPOINTS
from monitoring.bench import VACUUMED, scratch_schema, seed
from monitoring.services import rollup_refresh

TARGET_MS = 500.0


def key_of(name: str) -> str:
    return name.removeprefix("metrics-") + "_ms"


class Command(BaseCommand):
    help = "Seed 1M predictions and 200k decisions in a scratch schema and time every metrics endpoint."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--messages", type=int, default=1_000_000, help="messages = routing predictions")
        parser.add_argument("--decisions", type=int, default=200_000)
        parser.add_argument("--requests", type=int, default=5, help="timed requests per endpoint")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError(
                "bench_metrics measures the production database: set DATABASE_URL=postgres://... "
                f"(this database is {connection.vendor}; SQLite is for trying Claimwatch out, "
                "not for timing it)."
            )
        messages, decisions, requests = options["messages"], options["decisions"], options["requests"]
        if messages < 1_000 or not 100 <= decisions <= messages // 5 or requests < 1:
            raise CommandError(
                "Need --messages >= 1000, 100 <= --decisions <= messages/5 and --requests >= 1."
            )
        schema = f"bench_metrics_{secrets.token_hex(4)}"
        result: dict[str, Any] = {"schema": schema, "target_ms": TARGET_MS}
        with scratch_schema(schema):
            started = time.perf_counter()
            with tqdm(total=1, desc=f"migrating {schema}", leave=False):
                call_command("migrate", verbosity=0, interactive=False)
            bar = tqdm(total=5, desc="seeding", leave=False)

            def step(label: str) -> None:
                bar.set_postfix_str(label)
                bar.update(1)

            with transaction.atomic():
                seeded = seed(messages=messages, decisions=decisions, progress=step)
            bar.close()
            with connection.cursor() as cursor:
                for table in tqdm(VACUUMED, desc="vacuum analyze", leave=False):
                    cursor.execute(f'VACUUM ANALYZE "{table}"')
            result["seed_seconds"] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            refresh = rollup_refresh(full=True)
            result["rollup_build_ms"] = round(1000 * (time.perf_counter() - started), 1)
            result["rollup_days"] = refresh.days
            result["rollup_rows"] = refresh.rows
            with connection.cursor() as cursor:
                cursor.execute('VACUUM ANALYZE "monitoring_messagedayrollup"')
            result.update(self._measure(seeded, requests))
        result.update({"messages": messages, "predictions": messages, "decisions": seeded.decisions})
        if options["json"]:
            self.stdout.write(json.dumps(result, sort_keys=True))
            return
        for key in sorted(result):
            if key != "endpoints":
                self.stdout.write(f"{key:>28}: {result[key]}")

    def _measure(self, seeded, requests: int) -> dict[str, Any]:
        client = Client()
        client.force_login(seeded.admin)
        timings: dict[str, dict[str, float]] = {}
        for name in tqdm(list(ENDPOINTS), desc="endpoints", leave=False):
            url = reverse(name)
            samples = []
            for index in range(requests + 1):
                started = time.perf_counter()
                response = client.get(url, {"period": "day"})
                elapsed = 1000 * (time.perf_counter() - started)
                if response.status_code != 200:
                    raise CommandError(f"{url} answered {response.status_code}: {response.content[:300]!r}")
                if index:  # the first request warms caches and is reported apart
                    samples.append(elapsed)
                else:
                    first = elapsed
            timings[name] = {
                "median_ms": round(statistics.median(samples), 1),
                "max_ms": round(max(samples), 1),
                "first_ms": round(first, 1),
            }
        result: dict[str, Any] = {"endpoints": timings}
        for name, timing in timings.items():
            result[key_of(name)] = timing["median_ms"]
        slowest = max(timings, key=lambda n: timings[n]["median_ms"])
        result["slowest_endpoint"] = slowest
        result["slowest_endpoint_ms"] = timings[slowest]["median_ms"]
        result["all_within_target"] = all(t["median_ms"] <= TARGET_MS for t in timings.values())
        return result
