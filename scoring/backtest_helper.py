"""A second process for the backtest's scan (scoring.backtest), so that a large backtest uses two
CPU cores. Pure, no Django: the parent sends the two rule sets once, then batches of candidate
messages (id, body, stored routing parts); the helper matches them as `scan` does and sends back
the changes and its counts. The parent matches the rest of each chunk meanwhile.

A subprocess, not multiprocessing: Celery's prefork children are daemonic and may not start
multiprocessing children. Run as `python -m scoring.backtest_helper` (stdin/stdout: pickles).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from scoring.backtest import Change, ScanCounts, match_candidates, rule_diff
from scoring.rules import RuleSpec

_ROOT = Path(__file__).resolve().parents[1]


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

    def _send(self, item) -> None:
        assert self._process.stdin is not None
        pickle.dump(item, self._process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self._process.stdin.flush()

    def submit(self, batch: list[tuple[int, str, Sequence[Mapping] | None]]) -> None:
        """Start matching `batch` ((message id, body, stored routing parts) of candidates)."""
        assert not self._pending, "one batch at a time"
        self._send(("scan", batch))
        self._pending = True

    def collect(self, counts: ScanCounts) -> list[Change]:
        """The submitted batch's changes (in batch order; none when nothing is submitted), its
        counts added to `counts`."""
        if not self._pending:
            return []
        assert self._process.stdout is not None
        self._pending = False
        reply = pickle.load(self._process.stdout)  # noqa: S301 (our own child, over its pipe)
        if isinstance(reply, BaseException):
            raise RuntimeError("the backtest helper failed") from reply
        changes, matched, by_kind = reply
        counts.full_matches += matched
        for kind, number in by_kind.items():
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
            changes = match_candidates(request[1], diff, counts)
            reply = (changes, counts.full_matches, counts.by_kind)
        except Exception as exc:  # sent back, raised in the parent
            reply = exc
        pickle.dump(reply, sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__":
    main()
