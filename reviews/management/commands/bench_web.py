"""python manage.py bench_web [--json] [--messages N] [--decisions N] [--requests N]

Seeds (PostgreSQL only) 100,000 messages and 50,000 decisions into a schema of its own, migrated
from scratch and dropped at the end, so the real tables are never touched. After VACUUM ANALYZE
(what autovacuum does for production tables) it measures server-side time through Django's test
client in this process (full middleware stack, no network): p50/p95 of the queue page, one
message page, the records page filtered, and the first CSV bytes. Target: every p95 <= 150 ms.
Prints one JSON object with --json.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import time
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from tqdm import tqdm

from reviews.bench import seed, summary, timed

TARGET_P95_MS = 150.0
P95_KEYS = ("queue_p95_ms", "message_p95_ms", "records_p95_ms", "csv_first_byte_ms")
VACUUMED = (
    "scoring_message",
    "scoring_prediction",
    "scoring_rulematch",
    "explanations_explanation",
    "reviews_reviewdecision",
    "reviews_reviewlock",
    "auth_user",
)


class Command(BaseCommand):
    help = "Seed a large review dataset in a scratch schema and time the review pages."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument("--messages", type=int, default=100_000)
        parser.add_argument("--decisions", type=int, default=50_000)
        parser.add_argument("--requests", type=int, default=200, help="Timed requests per page.")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError(
                "bench_web measures the production database: set DATABASE_URL=postgres://... "
                f"(this database is {connection.vendor}; SQLite is for trying Claimwatch out, "
                "not for timing it)."
            )
        messages, decisions, requests = options["messages"], options["decisions"], options["requests"]
        if messages < 200 or not (0 < decisions <= messages // 2) or requests < 5:
            raise CommandError("Need --messages >= 200, 0 < --decisions <= messages/2 and --requests >= 5.")
        schema = f"bench_{secrets.token_hex(4)}"
        result: dict[str, Any] = {"schema": schema}
        with self._scratch_schema(schema):
            started = time.perf_counter()
            with tqdm(total=1, desc=f"migrating {schema}", leave=False):
                call_command("migrate", verbosity=0, interactive=False)
            with transaction.atomic():
                seeded = seed(messages=messages, decisions=decisions, seed_value=options["seed"])
            with connection.cursor() as cursor:
                for table in VACUUMED:
                    cursor.execute(f'VACUUM ANALYZE "{table}"')
            result["seed_seconds"] = round(time.perf_counter() - started, 1)
            result.update(self._measure(seeded, requests, options["seed"]))
        result.update({"messages": messages, "decisions": decisions, "requests_per_page": requests})
        result["target_p95_ms"] = TARGET_P95_MS
        result["all_p95_within_target"] = all(result[key] <= TARGET_P95_MS for key in P95_KEYS)
        if options["json"]:
            self.stdout.write(json.dumps(result, sort_keys=True))
            return
        for key in sorted(result):
            self.stdout.write(f"{key:>28}: {result[key]}")

    class _scratch_schema:
        """Point this process's connection at a new schema for the duration, then drop it."""

        def __init__(self, schema: str) -> None:
            self.schema = schema
            self.options = connection.settings_dict.setdefault("OPTIONS", {})
            self.saved = self.options.get("options")

        def __enter__(self) -> None:
            with connection.cursor() as cursor:
                cursor.execute(f'CREATE SCHEMA "{self.schema}"')
            connection.close()
            self.options["options"] = f"-c search_path={self.schema}"

        def __exit__(self, *exc: object) -> None:
            connection.close()
            if self.saved is None:
                self.options.pop("options", None)
            else:
                self.options["options"] = self.saved
            with connection.cursor() as cursor:
                cursor.execute(f'DROP SCHEMA "{self.schema}" CASCADE')

    def _measure(self, seeded, requests: int, seed_value: int) -> dict[str, Any]:
        rng = random.Random(seed_value)
        reviewer, auditor = Client(), Client()
        reviewer.force_login(seeded.reviewers[0])
        auditor.force_login(seeded.auditor)

        def ok(response):
            if response.status_code != 200:
                raise CommandError(f"{response.status_code} from {response.request['PATH_INFO']}")
            return response

        queue_url = reverse("reviews:queue")
        first_page = ok(reviewer.get(queue_url, secure=True))  # also checks the page works
        found = re.search(r"cursor=([A-Za-z0-9_-]+)", first_page.content.decode())
        if found is None:
            raise CommandError("The queue has a single page: seed more messages.")
        cursor = found.group(1)
        queue_variants = [
            {},
            {"claim_type": seeded.claim_types[0].code},
            {"rule_hit": "yes"},
            {"qa_sample": "no", "received": "week"},
            {"model_version": seeded.versions[1].pk},
            {"cursor": cursor},
        ]
        queue = timed(
            requests,
            lambda i: ok(reviewer.get(queue_url, queue_variants[i % len(queue_variants)], secure=True)),
            "queue",
        )
        sample = rng.sample(seeded.in_review_ids, k=min(len(seeded.in_review_ids), requests + 5))
        message = timed(
            requests,
            lambda i: ok(
                reviewer.get(reverse("reviews:message", args=[sample[i % len(sample)]]), secure=True)
            ),
            "message",
        )
        records_url = reverse("reviews:records")

        def records_filters(i: int) -> dict[str, Any]:
            return {
                "reviewer": seeded.reviewers[i % len(seeded.reviewers)].username,
                "claim_type": seeded.claim_types[i % len(seeded.claim_types)].code,
                "agreement": ("agree", "disagree", "")[i % 3],
                "date_from": seeded.first_day.isoformat(),
                "date_to": seeded.last_day.isoformat(),
            }

        records = timed(
            requests, lambda i: ok(auditor.get(records_url, records_filters(i), secure=True)), "records"
        )
        search = timed(
            max(5, requests // 4),
            lambda i: ok(
                auditor.get(
                    records_url, {"q": ("double by March", "SEC", "Clear promise")[i % 3]}, secure=True
                )
            ),
            "records search",
        )
        csv_url = reverse("reviews:records_csv")
        header_ms: list[float] = []

        first_row_ms: list[float] = []

        def first_row(i: int) -> None:
            started = time.perf_counter()
            response = ok(auditor.get(csv_url, records_filters(i), secure=True))
            for index, _chunk in enumerate(response.streaming_content):
                elapsed = (time.perf_counter() - started) * 1000
                if index == 0:
                    header_ms.append(elapsed)  # the header line: no query yet
                elif index == 1:
                    first_row_ms.append(elapsed)  # the first record: the query has run
            # (read to the end, so the client closes the response the way a server would)

        timed(requests, first_row, "csv first bytes")
        csv_first = first_row_ms[-requests:]
        full_started = time.perf_counter()
        full = ok(auditor.get(csv_url, {"reviewer": seeded.reviewers[0].username}, secure=True))
        rows = sum(chunk.count(b"\n") for chunk in full.streaming_content) - 1
        full_ms = (time.perf_counter() - full_started) * 1000

        figures: dict[str, Any] = {}
        for name, samples in (
            ("queue", queue),
            ("message", message),
            ("records", records),
            ("records_search", search),
        ):
            stats = summary(samples)
            figures[f"{name}_p50_ms"], figures[f"{name}_p95_ms"], figures[f"{name}_max_ms"] = (
                stats["p50"],
                stats["p95"],
                stats["max"],
            )
        csv_stats = summary(csv_first)
        figures["csv_first_byte_ms"] = csv_stats["p95"]
        figures["csv_first_byte_p50_ms"] = csv_stats["p50"]
        figures["csv_header_p95_ms"] = summary(header_ms[-requests:])["p95"]
        figures["csv_one_reviewer_rows"] = rows
        figures["csv_one_reviewer_total_ms"] = round(full_ms, 1)
        figures["in_review_messages"] = len(seeded.in_review_ids)
        return figures
