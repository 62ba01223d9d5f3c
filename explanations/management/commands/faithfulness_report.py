"""Compare explanation methods by ablation on flagged test-split corpus messages, and store it."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from explanations.errors import ReportError
from explanations.services import faithfulness_report_create
from scoring.errors import ScoringError
from scoring.models import ModelVersion

COLUMNS = (
    "flip_rate",
    "pass_rate",
    "comprehensiveness",
    "comprehensiveness_log_odds",
    "sufficiency",
    "aopc",
    "random_baseline",
    "token_f1",
)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    help = (
        "Faithfulness report of a model version: Integrated Gradients, occlusion, attention top-k "
        "(last-layer head mean, and the best single head chosen on flagged val-split messages) and "
        "random words, on flagged test-split messages: decision flip rate, comprehensiveness, "
        "sufficiency, AOPC and token-F1 against the rationale spans. Stored and shown on the "
        "faithfulness page."
    )

    def add_arguments(self, parser):
        parser.add_argument("--sample", type=int, default=100, help="flagged test messages (default 100)")
        parser.add_argument("--model", default=None, help="model version name (default: the active one)")
        parser.add_argument(
            "--selection",
            type=int,
            default=20,
            help="flagged val messages to choose the best head (default 20)",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--on",
            choices=("test", "canary"),
            default="test",
            dest="source",
            help="the flagged test-split messages (default), or the flagged canaries",
        )
        parser.add_argument(
            "--random-rankings",
            type=int,
            default=1,
            help="draw the random-words control this many times per message and print each drawing's "
            "pass rate, their mean and standard deviation (default 1: the one drawing the bar reads)",
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")

    def handle(
        self,
        *args,
        sample: int,
        model: str | None,
        selection: int,
        seed: int,
        as_json: bool,
        source: str,
        random_rankings: int,
        **_,
    ):
        if model:
            version = ModelVersion.objects.filter(name=model).first()
            if version is None:
                raise CommandError(f"No model version named {model!r}.")
        else:
            version = ModelVersion.objects.filter(is_active=True).first()
            if version is None:
                raise CommandError("No model version is active; name one with --model.")
        try:
            report = faithfulness_report_create(
                version=version,
                sample=sample,
                selection=selection,
                seed=seed,
                progress=True,
                source=source,
                random_rankings=random_rankings,
            )
        except (ReportError, ScoringError) as exc:
            raise CommandError(str(exc)) from exc
        results = report.results
        if as_json:
            payload = {
                "report_id": report.pk,
                "model_version": version.name,
                "sample_size": report.sample_size,
                "parameters": report.parameters,
                "methods": results["methods"],
                "best_head": results["best_head"],
                "ranking_by_pass_rate": results["ranking_by_pass_rate"],
                "ranking_by_flip_rate": results["ranking_by_flip_rate"],
                "random_rankings": results.get("random_rankings"),
                "skipped": results["skipped"],
            }
            self.stdout.write(json.dumps(payload, sort_keys=True))
            return
        self.stdout.write(
            f"faithfulness report {report.pk} of {version.name}: {report.sample_size} "
            f"{report.parameters['sample_source']} (threshold {version.threshold:.3f}, "
            f"n_steps {report.parameters['n_steps']})"
        )
        self.stdout.write(f"{'method':<28}" + "".join(f"{c:>19}" for c in COLUMNS))
        for name, figures in results["methods"].items():
            self.stdout.write(f"{name:<28}" + "".join(f"{_fmt(figures.get(c)):>19}" for c in COLUMNS))
        head = results["best_head"]
        if head:
            self.stdout.write(
                f"best head: layer {head['layer']} head {head['head']} (0-based), chosen on "
                f"{head['selection_size']} flagged val messages"
            )
        ig = results["methods"].get("integrated_gradients", {})
        if "mean_abs_convergence_delta" in ig:
            self.stdout.write(f"IG mean |convergence delta|: {ig['mean_abs_convergence_delta']:.2e}")
        self.stdout.write("by pass rate: " + " > ".join(results["ranking_by_pass_rate"]))
        self.stdout.write("by flip rate: " + " > ".join(results["ranking_by_flip_rate"]))
        drawn = results.get("random_rankings")
        if drawn:
            self.stdout.write(
                f"random words over {drawn['rankings']} drawings: pass rate mean "
                f"{drawn['pass_rate_mean']:.3f}, standard deviation {drawn['pass_rate_sd']:.3f} (the random "
                "row above is the first drawing)"
            )
