"""Backtest a rule-set draft over stored messages and print the figures the draft's page shows."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from monitoring.backtest import DEFAULT_DAYS, rule_backtest_now
from scoring.errors import RuleSetError
from scoring.models import RuleSetBacktest, RuleSetDraft


def _rate(rate: dict) -> str:
    if not rate["n"]:
        return "no reviewed message"
    share = f"{rate['rate']:.0%}, 95 % [{rate['low']:.0%}, {rate['high']:.0%}]"
    return f"{rate['successes']} of {rate['n']} ({share})"


class Command(BaseCommand):
    help = "Backtest a rule-set draft against the active rules over the stored messages of the last days."

    def add_arguments(self, parser):
        parser.add_argument("--draft", type=int, required=True, help="the draft's id (its page's number)")
        parser.add_argument("--days", type=int, default=DEFAULT_DAYS, help=f"period (default {DEFAULT_DAYS})")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")

    def handle(self, *args, draft: int, days: int, as_json: bool, **options):
        found = RuleSetDraft.objects.filter(pk=draft).first()
        if found is None:
            raise CommandError(f"There is no rule-set draft #{draft}.")
        try:
            backtest = rule_backtest_now(draft=found, days=days)
        except RuleSetError as exc:
            raise CommandError(str(exc)) from exc
        if backtest.status != RuleSetBacktest.Status.DONE:
            raise CommandError(f"Backtest #{backtest.pk} failed: {backtest.error}")
        r = backtest.results
        if as_json:
            self.stdout.write(
                json.dumps({"backtest": backtest.pk, "active_version": backtest.active.version, **r})
            )
            return
        self.stdout.write(
            f"Backtest #{backtest.pk}: draft #{found.pk} against v{backtest.active.version}, "
            f"{r['messages']} messages over {backtest.days} days, {r['scan']['seconds']:.1f} s "
            f"({r['scan']['candidates']} passed the prefilter)."
        )
        rules = r["rules"]
        self.stdout.write(
            f"Rules added {rules['added']}, removed {rules['removed']}, changed {rules['changed']}."
        )
        for kind, title in (
            ("added", "The draft routes, the active rules do not"),
            ("removed", "The active rules route, the draft does not"),
        ):
            g = r[kind]
            self.stdout.write(
                f"{title}: {g['messages']} ({g['in_queue_anyway']} flagged, QA sample or a part not read "
                "anyway, "
                f"{g['queue_effect']} change the queue); reviewed {g['reviewed']}, "
                f"claims {_rate(g['precision'])}."
            )
        for g in r["by_rule"]:
            self.stdout.write(
                f"  {g['kind']:<7} {g['rule']:<10} {g['claim_type']:<24} {g['messages']:>6} messages, "
                f"{g['flagged']} flagged, claims {_rate(g['precision'])}, "
                f"{g['claim_type']} claims {_rate(g['precision_of_type'])}"
            )
        self.stdout.write("Per claim type:")
        for g in r["by_claim_type"]:
            self.stdout.write(
                f"  {g['kind']:<7} {g['claim_type']:<24} {g['messages']:>6} messages, "
                f"{g['flagged']} flagged, claims {_rate(g['precision'])}, "
                f"{g['claim_type']} claims {_rate(g['precision_of_type'])}"
            )
        self.stdout.write(
            f"Queue: {r['routed_per_day']:.1f} routed a day; "
            f"with the draft {r['queue_change_per_day']:+.1f} a day."
        )
        for s in r["sample"][:10]:
            context = f"...{s['before'][-40:]}[{s['match']}]{s['after'][:40]}..."
            self.stdout.write(f"  {s['external_id']} {','.join(s['rules'])}: {context}")
