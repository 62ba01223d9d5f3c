"""Benchmark the active rule set: matching time per message at several message lengths, and with
--backtest N the rule backtest of a draft on N stored messages (monitoring.bench_backtest). It lives in
monitoring, which the backtest belongs to: scoring imports no monitoring code."""

from __future__ import annotations

import json
import random
import statistics
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from monitoring.bench_backtest import RULE_WORDS_PROSE
from scoring.rules import match
from scoring.selectors import active_compiled_rules

CLAIMS = [
    "Your returns are guaranteed.",
    "This is a risk-free investment.",
    "This stock will double by March.",
    "The SEC approved this fund.",
]


def build_message(rng: random.Random, chars: int) -> str:
    parts: list[str] = []
    size = 0
    while size < chars:
        sentence = rng.choice(CLAIMS) if rng.random() < 0.05 else rng.choice(RULE_WORDS_PROSE)
        parts.append(sentence)
        size += len(sentence) + 1
    return " ".join(parts)[:chars]


class Command(BaseCommand):
    help = "Time rule matching with the active rule set on synthetic messages of several lengths."

    def add_arguments(self, parser):
        parser.add_argument("--n", type=int, default=50, help="messages per length (default 50)")
        parser.add_argument("--lengths", default="200,10000,100000", help="comma-separated message lengths")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")
        parser.add_argument(
            "--backtest",
            type=int,
            default=0,
            metavar="N",
            help="also time the rule backtest on N seeded stored messages (rolled back afterwards)",
        )
        parser.add_argument(
            "--backtest-drafts",
            default="few,all",
            help="which drafts to backtest: few (an ordinary edit), all (every rule changed)",
        )

    def handle(self, *args, n: int, lengths: str, seed: int, as_json: bool, backtest: int, **options):
        try:
            sizes = [int(x) for x in lengths.split(",") if x.strip()]
        except ValueError as exc:
            raise CommandError(f"--lengths must be comma-separated integers, got {lengths!r}") from exc
        if n < 1 or not sizes or any(s < 1 for s in sizes):
            raise CommandError("--n and every length must be >= 1")
        compiled = active_compiled_rules()
        if not len(compiled):
            raise CommandError("No active rule set with enabled rules.")
        rng = random.Random(seed)
        report: dict[str, object] = {"rules": len(compiled), "rule_set_versions": sorted(compiled.versions)}
        for size in sizes:
            messages = [build_message(rng, size) for _ in range(n)]
            timings, hits = [], 0
            for body in tqdm(messages, desc=f"{size} chars", disable=as_json):
                start = time.perf_counter()
                hits += len(match(body, compiled))
                timings.append((time.perf_counter() - start) * 1000)
            timings.sort()
            report[f"chars_{size}"] = {
                "p50_ms": round(statistics.median(timings), 3),
                "p95_ms": round(timings[min(len(timings) - 1, int(0.95 * len(timings)))], 3),
                "msgs_per_s": round(1000 * len(timings) / sum(timings), 1),
                "hits_per_msg": round(hits / n, 2),
            }
        if backtest:
            # The backtest reads review decisions and monitoring's intervals (it lives in
            # monitoring); the benchmark imports it only when asked.
            from monitoring.bench_backtest import bench_backtest

            which = tuple(x for x in options["backtest_drafts"].split(",") if x)
            if backtest < 1 or not set(which) <= {"few", "all"} or not which:
                raise CommandError("--backtest must be >= 1 and --backtest-drafts a list of few, all")
            report["backtest"] = bench_backtest(backtest, which=which)
        if as_json:
            self.stdout.write(json.dumps(report, sort_keys=True))
        else:
            for key, value in report.items():
                self.stdout.write(f"{key}: {value}")
