"""python manage.py compare_html_to_text [--n 300] [--quoted 100] [--seed S] [--repeat 3] [--json]

The HTML-to-text comparison of the README ("Email and chat sources"), run again: `n` generated
HTML mails (Outlook, Gmail and newsletter styles in turn; `quoted` of the Outlook and Gmail ones
quote an earlier message), converted by each library installed here, timed and checked
(scoring.sources.html_compare). Libraries the product does not depend on are reported as not
installed unless installed into the environment (e.g. `pip install --target DIR html2text
html-text beautifulsoup4 selectolax` and PYTHONPATH=DIR)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.sources.html_compare import build_mails, compare, markdown_table


class Command(BaseCommand):
    help = "Compare HTML-to-text libraries on generated HTML mail (speed, leaks, quoted history)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--n", type=int, default=300, help="HTML mails (default 300)")
        parser.add_argument("--quoted", type=int, default=100, help="of them with a quoted earlier message")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--repeat", type=int, default=3, help="timed passes; the best is kept")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        n, n_quoted = options["n"], options["quoted"]
        if n < 1 or not 0 <= n_quoted <= n:
            raise CommandError("--n must be at least 1 and --quoted between 0 and --n")
        from scoring.corpus.streams import generate_traffic_messages

        rows = generate_traffic_messages(seed=options["seed"], n=n + n_quoted, claim_rate=0.1)
        texts, quotes = [r["body"] for r in rows[:n]], [r["body"] for r in rows[n:]] or [""]
        mails = build_mails(texts, quotes, n_quoted=n_quoted)
        results = compare(mails, repeat=options["repeat"])
        if options["json"]:
            self.stdout.write(
                json.dumps({"n": n, "quoted": sum(1 for m in mails if m.quoted), "rows": results})
            )
            return
        self.stdout.write(markdown_table(results, n_mails=n))
