"""Benchmark: the Scorer against transformers' text-classification pipeline (batch 1 and best)."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring.classifier.benchmark import MAX_TOKENS, MIN_TOKENS, MIXES, compare, mixed_length_texts
from scoring.classifier.loading import get_scorer
from scoring.corpus.jsonl import read_jsonl
from scoring.errors import ScoringError
from scoring.models import ModelVersion


class Command(BaseCommand):
    help = (
        "Messages per second of the project's Scorer and of the transformers text-classification "
        "pipeline (batch_size 1, 8, 32, 64) on the same model and the same mixed-length messages "
        f"({MIN_TOKENS} to {MAX_TOKENS} tokens, from corpus bodies), in one run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--n", type=int, default=2000, help="messages (default 2000)")
        parser.add_argument("--model", default=None, help="model version name (default: the active one)")
        parser.add_argument(
            "--mix",
            choices=MIXES,
            default="corpus",
            help="corpus: the corpus's own length mix (mostly short, a long tail); uniform: lengths "
            f"spread evenly over {MIN_TOKENS}-{MAX_TOKENS} tokens (default corpus)",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")

    def handle(self, *args, n, model, mix, seed, as_json, **_):
        if n < 1:
            raise CommandError("--n must be >= 1")
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
            scorer = get_scorer(version)
        except ScoringError as exc:
            raise CommandError(str(exc)) from exc
        try:
            bodies = [row["body"] for row in read_jsonl(settings.CORPUS_PATH, validate=False)]
        except OSError as exc:
            raise CommandError(f"The corpus {settings.CORPUS_PATH} cannot be read: {exc}") from exc
        if not bodies:
            raise CommandError(f"The corpus {settings.CORPUS_PATH} is empty.")
        texts = mixed_length_texts(bodies, scorer.tokenizer, n, mix=mix, seed=seed)
        report = {"model_version": version.name, **compare(scorer, texts, mix=mix, progress=True)}
        if as_json:
            self.stdout.write(json.dumps(report, sort_keys=True))
        else:
            for key, value in report.items():
                self.stdout.write(f"{key}: {value}")
