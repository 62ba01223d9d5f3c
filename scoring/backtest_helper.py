"""A second process for the backtest's scan (scoring.backtest), so that a large backtest uses two
CPU cores. Pure, no Django: the parent sends the two rule sets once, then batches of rows (id,
body, stored routing parts); the helper prefilters and matches them as `scan` does and sends back
the changes and its counts. The parent does the rest of each chunk meanwhile, and reads the next.

The helper's share of a chunk follows the waits: a parent that had to wait for the helper's reply
gives it less next time, one that did not gives it more, so that the two processes finish a chunk
at about the same time whatever the parent's other work (reading the bodies) costs on a machine.

A subprocess, not multiprocessing: Celery's prefork children are daemonic and may not start
multiprocessing children. Run as `python -m scoring.backtest_helper` (stdin/stdout: pickles).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scoring.backtest import Change, ScanCounts, rule_diff, scan_rows
from scoring.rules import RuleSpec

_ROOT = Path(__file__).resolve().parents[1]
SHARE_STEP = 0.02  # how far one chunk's wait moves the share
SHARE_RANGE = (0.1, 0.9)
WAITED_S = 0.002  # a reply that took longer to come was waited for


class ScanHelper:
    """The parent's handle on one helper process (a context manager: the process ends with it)."""

    def __init__(self, active: Sequence[RuleSpec], draft: Sequence[RuleSpec]) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "scoring.backtest_helper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=_ROOT,
        )
        self._send(("rules", list(active), list(draft)))
        self._pending = False
        self.share = 0.5  # of a chunk's rows, for the helper (see the module docstring)

    def _send(self, item) -> None:
        assert self._process.stdin is not None
        pickle.dump(item, self._process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self._process.stdin.flush()

    def submit(self, batch: list[tuple[int, str, Any]]) -> None:
        """Start scanning `batch` ((message id, body, stored routing parts) rows)."""
        assert not self._pending, "one batch at a time"
        self._send(("scan", batch))
        self._pending = True

    def collect(self, counts: ScanCounts) -> list[Change]:
        """The submitted batch's changes (in batch order; none when nothing is submitted), its
        counts added to `counts`; the share moved by whether the reply was waited for."""
        if not self._pending:
            return []
        assert self._process.stdout is not None
        self._pending = False
        started = time.perf_counter()
        reply = pickle.load(self._process.stdout)  # noqa: S301 (our own child, over its pipe)
        step = -SHARE_STEP if time.perf_counter() - started > WAITED_S else SHARE_STEP
        self.share = min(max(self.share + step, SHARE_RANGE[0]), SHARE_RANGE[1])
        if isinstance(reply, BaseException):
            raise RuntimeError("the backtest helper failed") from reply
        changes, theirs = reply
        counts.messages += theirs.messages
        counts.candidates += theirs.candidates
        counts.full_matches += theirs.full_matches
        for kind, number in theirs.by_kind.items():
            counts.by_kind[kind] += number
        return changes

    def close(self) -> None:
        if self._pending:  # given up on (an error in the parent): its reply would never be read
            self._process.kill()
        if self._process.poll() is None:
            try:
                self._send(None)
                self._process.stdin.close()  # type: ignore[union-attr]
                self._process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> ScanHelper:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def main() -> None:
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    _, active, draft = pickle.load(source)  # noqa: S301 (from the parent, over our stdin)
    diff = rule_diff(active, draft)
    while (request := pickle.load(source)) is not None:  # noqa: S301 (as above)
        try:
            counts = ScanCounts()
            reply = (scan_rows(request[1], diff, counts), counts)
        except Exception as exc:  # sent back, raised in the parent
            reply = exc
        pickle.dump(reply, sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__":
    main()
