"""Export reviewed decisions as labelled JSONL for `train_classifier --extra FILE`."""

from __future__ import annotations

import json
import sys
from datetime import datetime, time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date

from reviews.training_data import as_jsonl, training_data_export


class Command(BaseCommand):
    help = "Export reviewed messages (latest standing decision as the label) as JSONL training rows."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--since", help="Only decisions made on or after this date (YYYY-MM-DD).")
        parser.add_argument("--out", default="-", help="Output file (default: standard output).")

    def handle(self, *args: Any, **options: Any) -> None:
        since = None
        if options["since"]:
            day = parse_date(options["since"])
            if day is None:
                raise CommandError(f"--since {options['since']!r} is not a date (YYYY-MM-DD).")
            since = timezone.make_aware(datetime.combine(day, time.min))
        rows, summary = training_data_export(since=since)
        if options["out"] == "-":
            sys.stdout.writelines(as_jsonl(rows))
        else:
            path = Path(options["out"])
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as handle:
                handle.writelines(as_jsonl(rows))
        self.stderr.write(json.dumps(summary.as_dict(), sort_keys=True))
