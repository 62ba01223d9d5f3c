"""python manage.py bench_import [--n 10000] [--json] [--seed S]

Times parsing and storing an mbox of `n` generated mixed messages (scoring.sources.mailgen:
plain, HTML-only, multipart/alternative with a PDF and a text attachment, replies quoting their
parent), as `import_messages` does it (scoring.sources.mailboxes.read_mbox, then
scoring.services.sources.sources_import in chunks of BULK_MAX_ITEMS): parsing, threading and
storing, with IMPORT_PARSE_PROCESSES processes parsing from IMPORT_PARALLEL_FROM messages on;
scoring excluded (its tasks are never published). Everything is written inside one
transaction on the configured database and rolled back at the end, so nothing is kept (and
the per-chunk commits of a real import are not counted). Prints messages/s (the whole import,
and parsing alone), peak RSS and the machine. Target on a 2-core CPU: >= 500 messages/s."""

from __future__ import annotations

import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from tqdm import tqdm

from scoring.services.sources import mail_limits, parse_processes, sources_import
from scoring.sources.mailboxes import read_mbox
from scoring.sources.mailgen import write_mixed_mbox

TARGET_MSGS_PER_S = 500.0


class _Rollback(Exception):
    pass


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class Command(BaseCommand):
    help = "Time parsing and storing a generated mbox of mixed messages (scoring excluded)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--n", type=int, default=10_000, help="messages in the mbox (default 10,000)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        n = options["n"]
        if n < 1:
            raise CommandError("--n must be at least 1")
        from scoring.corpus.streams import generate_traffic_messages

        texts = [row["body"] for row in generate_traffic_messages(seed=options["seed"], n=n, claim_rate=0.1)]
        with tempfile.TemporaryDirectory(prefix="bench-import-") as folder:
            path = Path(folder) / "bench.mbox"
            kinds = write_mixed_mbox(path, texts, seed=options["seed"])
            rss_before = _peak_rss_mb()
            parse_s = self._parse_only(path)
            report, import_s, import_cpu_s = self._import(path, n)
        result = {
            "n": n,
            "kinds": kinds,
            "created": report.created,
            "errors": report.error,
            "import_seconds": round(import_s, 2),
            "messages_per_s": round(n / import_s, 1),
            # this process's CPU time: on a machine shared with other work, n / cpu seconds is
            # what the import does with one core to itself
            "import_cpu_seconds": round(import_cpu_s, 2),
            "messages_per_cpu_s": round(n / import_cpu_s, 1),
            "load_average": round(os.getloadavg()[0], 2),
            "parse_only_messages_per_s": round(n / parse_s, 1),
            "target_messages_per_s": TARGET_MSGS_PER_S,
            "meets_target": n / import_s >= TARGET_MSGS_PER_S,
            "peak_rss_mb": round(_peak_rss_mb(), 1),
            "peak_rss_mb_before_import": round(rss_before, 1),
            "parse_processes": parse_processes(n),
            "database": connection.vendor,
            "cpu_model": _cpu_model(),
            "cpus": len(os.sched_getaffinity(0)),
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"{n:,} messages ({', '.join(f'{k} {v}' for k, v in kinds.items())}) parsed and stored in "
            f"{import_s:.1f} s: {result['messages_per_s']} messages/s (target {TARGET_MSGS_PER_S:.0f}); "
            f"parsing alone {result['parse_only_messages_per_s']} messages/s; "
            f"peak RSS {result['peak_rss_mb']} MB; "
            f"{result['database']}, {result['cpu_model']}, {result['cpus']} CPUs; errors {report.error}"
        )

    @staticmethod
    def _parse_only(path: Path) -> float:
        started = time.perf_counter()
        for _ in read_mbox(path, limits=mail_limits()):
            pass
        return time.perf_counter() - started

    @staticmethod
    def _import(path: Path, n: int):
        outcome: dict[str, Any] = {}
        try:
            with transaction.atomic():
                started, cpu = time.perf_counter(), time.process_time()
                with tqdm(total=n, desc="importing", unit="msg", disable=None) as bar:
                    outcome["report"] = sources_import(
                        reads=read_mbox(path, limits=mail_limits(), processes=parse_processes(n)),
                        progress=bar.update,
                    )
                outcome["seconds"] = time.perf_counter() - started
                outcome["cpu_seconds"] = time.process_time() - cpu
                raise _Rollback
        except _Rollback:
            pass
        return outcome["report"], outcome["seconds"], outcome["cpu_seconds"]
