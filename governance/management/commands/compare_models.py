"""compare_models A B: the challenger B against the reference A, printed (or one JSON object)."""

from __future__ import annotations

import json
from datetime import datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date

from governance.services.comparisons import model_comparison_request, model_comparison_run
from scoring.models import ModelVersion


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    help = "Compare model version B (challenger) with A (reference) on the corpus and on reviewed traffic."

    def add_arguments(self, parser) -> None:
        parser.add_argument("baseline", help="Reference version name (A).")
        parser.add_argument("candidate", help="Challenger version name (B).")
        parser.add_argument("--since", help="Reviewed traffic since this date (YYYY-MM-DD); default: all.")
        parser.add_argument("--drift", type=int, default=200, help="Generated drift-phrasing messages.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        versions = {
            v.name: v
            for v in ModelVersion.objects.filter(name__in=[options["baseline"], options["candidate"]])
        }
        for name in (options["baseline"], options["candidate"]):
            if name not in versions:
                raise CommandError(f"No model version named {name!r}.")
        since = None
        if options["since"]:
            day = parse_date(options["since"])
            if day is None:
                raise CommandError(f"--since {options['since']!r} is not a date.")
            since = timezone.make_aware(datetime.combine(day, time.min))
        comparison = model_comparison_request(
            baseline=versions[options["baseline"]], candidate=versions[options["candidate"]]
        )
        comparison = model_comparison_run(comparison_id=comparison.pk, since=since, drift_n=options["drift"])
        if comparison.status != comparison.Status.DONE:
            raise CommandError(f"comparison failed: {comparison.error}")
        results = comparison.results
        if options["json"]:
            self.stdout.write(json.dumps({"comparison_id": comparison.pk, **results}))
            return
        a, b = results["baseline"]["name"], results["candidate"]["name"]
        self.stdout.write(
            f"{b} (challenger, t={results['candidate']['threshold']:.3f}) vs "
            f"{a} (reference, t={results['baseline']['threshold']:.3f})"
        )
        for label, by_version in results["sets"].items():
            self.stdout.write(f"\n{label}:")
            for name in (a, b):
                overall = by_version[name]["overall"]
                self.stdout.write(
                    f"  {name:<40} n={overall.get('n', 0):>5}  precision {_fmt(overall.get('precision'))}"
                    f"  recall {_fmt(overall.get('recall'))}"
                )
                for code, stats in by_version[name].get("per_claim_type", {}).items():
                    recall, precision = _fmt(stats["recall"]), _fmt(stats["precision"])
                    self.stdout.write(f"      {code:<26} recall {recall}  precision {precision}")
            self.stdout.write(f"  they disagree on {results['disagreement_counts'][label]} messages")
        canary = results.get("canary") or {}
        if canary.get("error"):
            self.stdout.write(f"\ncanary check: could not run: {canary['error']}")
        elif canary:
            self.stdout.write(f"\ncanary check ({canary['canaries']} canaries):")
            for name in (a, b):
                rates = "  ".join(f"{m} {_fmt(r)}" for m, r in canary["pass_rates"].get(name, {}).items())
                self.stdout.write(f"  {name:<40} pass rates: {rates}")
            self.stdout.write(
                f"  rank correlation of {b}'s attributions with {a}'s: {_fmt(canary['rank_correlation'])}; "
                f"{len(canary['findings'])} canary checks pass with {a} and fail with {b}"
            )
