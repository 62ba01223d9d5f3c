"""python manage.py bench_import [--n 10000] [--json] [--seed S]

Times parsing and storing an mbox of `n` generated mixed messages (scoring.sources.mailgen:
plain, HTML-only, multipart/alternative with a PDF and a text attachment, replies quoting their
parent), as `import_messages` does it (scoring.sources.mailboxes.read_mbox, then
scoring.services.sources.sources_import in chunks of BULK_MAX_ITEMS): parsing, threading and
storing, with IMPORT_PARSE_PROCESSES processes parsing from IMPORT_PARALLEL_FROM messages on;
scoring excluded (its tasks are never published). Everything is written inside one
transaction on the configured database and rolled back at the end, so nothing is kept (and
the per-chunk commits of a real import are not counted). Prints messages/s (the whole import,
and parsing alone), peak RSS and the machine. Target on a 2-core CPU: >= 500 messages/s.

Peak RSS is reported per kind of process. The importing process: RUSAGE_SELF. The parse
processes: each one's own high-water mark (VmHWM in /proc/<pid>/status, read while they run),
and the kernel's RUSAGE_CHILDREN figure besides, named as what it is: a spawned child's
ru_maxrss keeps the pages it shared with this process between fork and exec, so it reports
about this process's size at the time, not what the parse process used. The whole is bounded
by self + processes x the largest parse process. CPU time counts the parse processes
(RUSAGE_CHILDREN) besides this one."""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import resource
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from tqdm import tqdm

from scoring.services.sources import mail_limits, parse_processes, sources_import
from scoring.sources.mailboxes import read_mbox
from scoring.sources.mailgen import write_mixed_mbox

TARGET_MSGS_PER_S = 500.0
# Read the parse processes' high-water marks every this many messages (and at the first).
CHILD_SAMPLE_EVERY = 50

T = TypeVar("T")


class _Rollback(Exception):
    pass


def _peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0  # KiB on Linux


def _children_peak_mb() -> float | None:
    """The largest VmHWM of this process's live multiprocessing children (None: none, or no /proc)."""
    peaks = []
    for child in multiprocessing.active_children():
        try:
            status = Path(f"/proc/{child.pid}/status").read_text()
        except OSError:
            continue
        peaks += [int(line.split()[1]) / 1024.0 for line in status.splitlines() if line.startswith("VmHWM:")]
    return max(peaks, default=None)


class _ChildSampler:
    """Passes the reads through, reading the parse processes' peaks now and then."""

    def __init__(self) -> None:
        self.peak_mb: float | None = None

    def wrap(self, reads: Iterable[T]) -> Iterator[T]:
        for index, read in enumerate(reads):
            if index % CHILD_SAMPLE_EVERY == 0:
                self._sample()
            yield read

    def _sample(self) -> None:
        peak = _children_peak_mb()
        if peak is not None:
            self.peak_mb = max(peak, self.peak_mb or 0.0)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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
            children_rss_before = _peak_rss_mb(resource.RUSAGE_CHILDREN)
            parse_s = self._parse_only(path)
            sampler = _ChildSampler()
            report, import_s, import_cpu_s, children_cpu_s = self._import(path, n, sampler)
        processes = parse_processes(n)
        rss_self, rss_child = _peak_rss_mb(), sampler.peak_mb
        cpu_s = import_cpu_s + children_cpu_s
        result = {
            "n": n,
            "kinds": kinds,
            "created": report.created,
            "errors": report.error,
            "import_seconds": round(import_s, 2),
            "messages_per_s": round(n / import_s, 1),
            # CPU time of this process and of the parse processes: on a machine shared with other
            # work, n / cpu seconds is what the import does with one core to itself
            "import_cpu_seconds": round(import_cpu_s, 2),
            "import_cpu_seconds_children": round(children_cpu_s, 2),
            "messages_per_cpu_s": round(n / cpu_s, 1) if cpu_s > 0 else None,
            "load_average": round(os.getloadavg()[0], 2),
            "parse_only_messages_per_s": round(n / parse_s, 1),
            "target_messages_per_s": TARGET_MSGS_PER_S,
            "meets_target": n / import_s >= TARGET_MSGS_PER_S,
            "peak_rss_mb_self": round(rss_self, 1),
            "peak_rss_mb_self_before_import": round(rss_before, 1),
            # the largest parse process's own peak (VmHWM); None when parsed in this process
            "peak_rss_mb_parse_process": round(rss_child, 1) if rss_child is not None else None,
            # the kernel's RUSAGE_CHILDREN ru_maxrss (see the module docstring: for a spawned child
            # it is about this process's size at fork time)
            "peak_rss_mb_children_rusage": round(_peak_rss_mb(resource.RUSAGE_CHILDREN), 1),
            "peak_rss_mb_children_rusage_before_import": round(children_rss_before, 1),
            "peak_rss_mb_total_bound": round(rss_self + processes * (rss_child or 0.0), 1),
            "parse_processes": processes,
            "database": connection.vendor,
            "cpu_model": _cpu_model(),
            "cpus": len(os.sched_getaffinity(0)),
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        rss = (
            f"peak RSS: importing process {result['peak_rss_mb_self']} MB "
            f"({result['peak_rss_mb_self_before_import']} MB before the import), "
        )
        if rss_child is not None:
            rss += (
                f"largest of its {processes} parse processes {result['peak_rss_mb_parse_process']} MB "
                f"(its own VmHWM), all together at most {result['peak_rss_mb_total_bound']} MB"
            )
        else:
            rss += "no parse processes measured (parsed in the importing process, or no /proc)"
        self.stdout.write(
            f"{n:,} messages ({', '.join(f'{k} {v}' for k, v in kinds.items())}) parsed and stored in "
            f"{import_s:.1f} s: {result['messages_per_s']} messages/s (target {TARGET_MSGS_PER_S:.0f}); "
            f"parsing alone {result['parse_only_messages_per_s']} messages/s; {rss}; "
            f"{result['database']}, {result['cpu_model']}, {result['cpus']} CPUs; errors {report.error}"
        )

    @staticmethod
    def _parse_only(path: Path) -> float:
        started = time.perf_counter()
        for _ in read_mbox(path, limits=mail_limits()):
            pass
        return time.perf_counter() - started

    @staticmethod
    def _import(path: Path, n: int, sampler: _ChildSampler):
        outcome: dict[str, Any] = {}
        try:
            with transaction.atomic():
                started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu_s()
                with tqdm(total=n, desc="importing", unit="msg", disable=None) as bar:
                    outcome["report"] = sources_import(
                        reads=sampler.wrap(
                            read_mbox(path, limits=mail_limits(), processes=parse_processes(n))
                        ),
                        progress=bar.update,
                    )
                outcome["seconds"] = time.perf_counter() - started
                outcome["cpu_seconds"] = time.process_time() - cpu
                outcome["children_cpu_seconds"] = _children_cpu_s() - children
                raise _Rollback
        except _Rollback:
            pass
        return outcome["report"], outcome["seconds"], outcome["cpu_seconds"], outcome["children_cpu_seconds"]
