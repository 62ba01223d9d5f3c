"""python manage.py verify_audit_chain: recompute every decision's hash and check the links.

Exit status 0 with "intact, N records"; exit status 1 naming the first broken record."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from tqdm import tqdm

from reviews.selectors import audit_chain_report


class Command(BaseCommand):
    help = "Verify the hash chain of review decisions (exit 1 if it is broken)."

    def handle(self, *args, **options) -> None:
        def bar(rows, total):
            return tqdm(rows, total=total, unit="record", desc="verifying", disable=options["verbosity"] < 1)

        report = audit_chain_report(progress=bar)
        if report.intact:
            self.stdout.write(f"Audit chain {report.summary()} (head {report.head_hash}).")
            return
        self.stderr.write(f"Audit chain {report.summary()}")
        raise SystemExit(1)
