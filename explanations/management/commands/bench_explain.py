"""Benchmark: the project's batched explanation (IG + check) against a naive per-message loop."""

from __future__ import annotations

import json

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from explanations.attribution import IG_PRECISIONS
from explanations.bench import compare
from explanations.corpus import CorpusUnavailable, read_rows
from explanations.engine import MessageToExplain
from explanations.evaluation import flagged_rows
from explanations.services.explain import ig_budget
from scoring.classifier.loading import get_scorer
from scoring.errors import ScoringError
from scoring.models import ModelVersion


class Command(BaseCommand):
    help = (
        "Flagged messages per second for the project's batched explanation (Integrated Gradients + "
        "its faithfulness check) against a naive loop that calls Captum once per message with the "
        "same n_steps and checks each message alone, in one run on the same corpus messages."
    )

    def add_arguments(self, parser):
        parser.add_argument("--n", type=int, default=200, help="flagged messages (default 200)")
        parser.add_argument("--model", default=None, help="model version name (default: the active one)")
        parser.add_argument("--n-steps", type=int, default=None, help="IG steps (default: IG_N_STEPS)")
        parser.add_argument(
            "--batch-size", type=int, default=None, help="messages per batch (default: EXPLAIN_BATCH_SIZE)"
        )
        parser.add_argument(
            "--precision",
            choices=IG_PRECISIONS,
            default=None,
            help="IG gradients of the batched path (default: IG_PRECISION; the naive loop is float32)",
        )
        parser.add_argument(
            "--refinement",
            action="store_true",
            help="also time the pipeline's path with IG_REFINE_DOUBLINGS refinement (refined_* keys)",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")

    def handle(self, *args, n, model, n_steps, batch_size, precision, refinement, seed, as_json, **_):
        n_steps = settings.IG_N_STEPS if n_steps is None else n_steps
        precision = settings.IG_PRECISION if precision is None else precision
        batch_size = settings.EXPLAIN_BATCH_SIZE if batch_size is None else batch_size
        if n < 1 or n_steps < 2 or batch_size < 1:
            raise CommandError("--n and --batch-size must be >= 1 and --n-steps >= 2")
        version = (
            ModelVersion.objects.filter(name=model).first()
            if model
            else ModelVersion.objects.filter(is_active=True).first()
        )
        if version is None:
            raise CommandError(
                f"No model version named {model!r}." if model else "No model version is active."
            )
        try:
            rows = read_rows(settings.CORPUS_PATH)
            scorer = get_scorer(version)
        except (CorpusUnavailable, ScoringError) as exc:
            raise CommandError(str(exc)) from exc
        rng = np.random.default_rng(seed)
        picked = flagged_rows(scorer, rows, threshold=version.threshold, limit=n, rng=rng, progress=True)
        if not picked:
            raise CommandError(f"{version.name} flags none of the corpus messages")
        items = [MessageToExplain(r["body"], version.threshold) for r in picked]
        report = {
            "model_version": version.name,
            **compare(
                scorer,
                items,
                n_steps=n_steps,
                batch_size=batch_size,
                precision=precision,
                refinement=settings.IG_REFINE_DOUBLINGS if refinement else 0,
                progress=True,
                ig_budget=ig_budget(),
            ),
        }
        if as_json:
            self.stdout.write(json.dumps(report, sort_keys=True))
        else:
            for key, value in report.items():
                self.stdout.write(f"{key}: {value}")
