"""python manage.py verify_audit_chain: recompute every decision's hash, check the links, compare
the chain with its signed checkpoints and each record's message text and explanation with its
snapshot.

Exit status 0 with "intact, N records"; exit status 1 with one line per finding (its kind in
brackets: chain_broken, truncated, rewritten, checkpoint_forged, checkpoint_removed,
checkpoint_missing, checkpoint_log_unavailable, body_changed, explanation_changed, explanation_missing)."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from tqdm import tqdm

from reviews.selectors import audit_chain_report


class Command(BaseCommand):
    help = "Verify the audit trail: hash chain, checkpoints and evidence (exit 1 on any finding)."

    def handle(self, *args, **options) -> None:
        def bar(rows, total):
            return tqdm(rows, total=total, unit="record", desc="verifying", disable=options["verbosity"] < 1)

        report = audit_chain_report(progress=bar)
        latest = report.latest_checkpoint
        anchor = (
            f"latest checkpoint: record #{latest.sequence}, {latest.written_at:%Y-%m-%d %H:%M:%S} UTC"
            if latest is not None
            else "no checkpoint yet"
        )
        if report.intact:
            self.stdout.write(f"Audit chain {report.summary()} (head {report.head_hash}; {anchor}).")
            return
        self.stderr.write(f"Audit chain {report.summary()} ({anchor})")
        for finding in report.findings:
            self.stderr.write(f"  {finding.line()}")
        for kind, more in report.omitted.items():
            self.stderr.write(f"  [{kind.value}] ... and {more} more")
        raise SystemExit(1)
