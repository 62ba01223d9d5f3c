"""Measure a model version on the hand-written evaluation sets, as the system routes them."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring.classifier.evaluation import (
    EvaluationSetError,
    hard_negative_rate,
    read_handwritten,
    reliability,
    score_rows,
    summarize_decisions,
)
from scoring.classifier.loading import get_scorer
from scoring.errors import ScoringError
from scoring.models import ModelVersion
from scoring.selectors import active_compiled_rules


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    help = (
        "Score the hand-written evaluation sets (scoring/corpus/handwritten/, or --file) with a model "
        "version and the active rules, and print what the pipeline would do: per set, the model flag "
        "and the routing decision (flag or rule hit) overall, per claim type and per kind, the "
        "false-positive rate on hard negatives (kind innocent_context) and the expected calibration "
        "error. --json prints one JSON object."
    )

    def add_arguments(self, parser):
        parser.add_argument("--model-version", default=None, help="Version name (default: the active one).")
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="NAME",
            help=f"A set in {settings.EVALUATION_SETS_DIR} by name (repeatable; default: "
            f"{', '.join(settings.EVALUATION_SETS)}).",
        )
        parser.add_argument("--file", action="append", default=[], help="Another hand-written JSONL file.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args, **options):
        name = options["model_version"]
        version = (
            ModelVersion.objects.filter(name=name).first()
            if name
            else ModelVersion.objects.filter(is_active=True).first()
        )
        if version is None:
            raise CommandError(f"No model version named {name!r}." if name else "No model version is active.")
        paths = [Path(settings.EVALUATION_SETS_DIR) / f"{s}.jsonl" for s in options["set"]]
        paths += [Path(f) for f in options["file"]]
        if not paths:
            paths = [Path(settings.EVALUATION_SETS_DIR) / f"{s}.jsonl" for s in settings.EVALUATION_SETS]
        try:
            scorer = get_scorer(version)
            sets = {path.stem: read_handwritten(path) for path in paths}
        except (ScoringError, EvaluationSetError) as exc:
            raise CommandError(str(exc)) from exc
        rules = active_compiled_rules()
        report = {"model_version": version.name, "threshold": version.threshold, "sets": {}}
        for set_name, rows in sets.items():
            scored = score_rows(scorer, rows, threshold=version.threshold, rules=rules)
            report["sets"][set_name] = {
                "decisions": summarize_decisions(scored),
                "hard_negative_false_positive_rate": hard_negative_rate(scored),
                "calibration": reliability([r["score"] for r in scored], [r["label"] for r in scored]),
            }
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, sort_keys=True))
            return
        self.stdout.write(f"{version.name} at threshold {version.threshold:.4f}")
        for set_name, figures in report["sets"].items():
            calibration = figures["calibration"]
            self.stdout.write(
                f"\n{set_name}: {calibration['n']} messages, ECE {_fmt(calibration['ece'])}, hard-negative "
                f"false-positive rate (routed) {_fmt(figures['hard_negative_false_positive_rate'])}"
            )
            for key in ("flagged", "routed"):
                overall = figures["decisions"][key]["overall"]
                self.stdout.write(
                    f"  {key:7s} recall {_fmt(overall['recall'])} precision {_fmt(overall['precision'])} "
                    f"false-positive rate {_fmt(overall['false_positive_rate'])} "
                    f"(tp {overall['tp']} fp {overall['fp']} fn {overall['fn']} tn {overall['tn']})"
                )
            routed = figures["decisions"]["routed"]
            for code, stats in routed["per_claim_type"].items():
                self.stdout.write(f"    {code}: {stats['caught']}/{stats['claims']} routed")
            for kind, stats in routed["per_kind"].items():
                self.stdout.write(
                    f"    kind {kind}: claims routed {stats['tp']}/{stats['positives']}, "
                    f"innocent routed {stats['fp']}/{stats['negatives']}"
                )
