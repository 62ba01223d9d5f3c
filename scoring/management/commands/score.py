"""Score a JSONL file of messages with a model version, without web server or broker."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scoring.classifier.loading import get_scorer
from scoring.errors import ScoringError
from scoring.models import ModelVersion
from scoring.routing import routing_rule_hits
from scoring.selectors import active_compiled_rules

CHUNK = 256


def _parse(number: int, line: str) -> tuple[object, str | None, str | None]:
    """(id, body, error) of one input line."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, None, f"line {number} is not valid JSON: {exc.msg}"
    if not isinstance(row, dict):
        return None, None, f"line {number} is not a JSON object"
    row_id = row.get("id")
    if row_id is None or isinstance(row_id, dict | list):
        return row_id, None, f"line {number} needs an 'id' (string or number)"
    if not isinstance(row.get("body"), str):
        return row_id, None, f"line {number} needs a 'body' string"
    return row_id, row["body"], None


def _output(row_id, body: str, result, version: ModelVersion, scorer, rules) -> dict:
    """One scored row: the model's flag, the routing rule hits and the pipeline's decision."""
    hits = routing_rule_hits(body, rules, segmented=scorer.segmented, segments=result.segments)
    flagged = result.score >= version.threshold
    return {
        "id": row_id,
        "score": round(result.score, 6),
        "flagged": flagged,
        "rule_hits": [{"rule": h.code, "claim_type": h.claim_type, "text": h.text} for h in hits],
        "routed": flagged or bool(hits),
        "claim_type": result.claim_type,
        "driving_part": result.windows[result.best_window].kind,
        "model_version": version.name,
        "threshold": version.threshold,
    }


def _chunks(lines: Iterable[str]) -> Iterator[list[tuple[int, str]]]:
    chunk: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            chunk.append((number, line))
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class Command(BaseCommand):
    help = (
        "Read JSONL rows {id, body} from a file or stdin (-) and print one JSON line per row: id, "
        "score, flagged (the model alone), rule_hits (the active rules, in the parts of the "
        "message that route), routed (flagged or a rule hit: what the pipeline does), claim_type, "
        "driving_part, model_version, threshold. A bad row prints a JSON error line."
    )

    stealth_options = ("stdin",)  # tests pass a stream in place of sys.stdin

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True, help="JSONL file, or - for stdin.")
        parser.add_argument("--model-version", default=None, help="Version name (default: the active one).")

    def handle(self, *args, **options):
        if options["model_version"]:
            version = ModelVersion.objects.filter(name=options["model_version"]).first()
            if version is None:
                raise CommandError(f"No model version named {options['model_version']!r}.")
        else:
            version = ModelVersion.objects.filter(is_active=True).first()
            if version is None:
                raise CommandError("No model version is active: run `make run` or activate_model first.")
        try:
            scorer = get_scorer(version)
        except ScoringError as exc:
            raise CommandError(str(exc)) from exc
        rules = active_compiled_rules()
        if options["input"] == "-":
            self._score(options.get("stdin") or sys.stdin, scorer, version, rules)
            return
        path = Path(options["input"])
        if not path.is_file():
            raise CommandError(f"{path} does not exist.")
        with path.open(encoding="utf-8", errors="replace") as handle:
            self._score(handle, scorer, version, rules)

    def _score(self, lines: Iterable[str], scorer, version: ModelVersion, rules) -> None:
        for chunk in _chunks(lines):
            outputs: list[dict | None] = []
            texts, slots = [], []
            for number, line in chunk:
                row_id, body, error = _parse(number, line)
                error = error or (
                    f"line {number}: {reason}" if (reason := scorer.refusal_reason(body)) else None
                )
                if error:
                    outputs.append({"id": row_id, "line": number, "error": error})
                else:
                    slots.append(len(outputs))
                    outputs.append(None)
                    texts.append((row_id, number, body))
            results = self._score_texts(scorer, texts)
            for slot, (row_id, number, body), result in zip(slots, texts, results, strict=True):
                outputs[slot] = (
                    {"id": row_id, "line": number, "error": result}
                    if isinstance(result, str)
                    else _output(row_id, body, result, version, scorer, rules)
                )
            for output in outputs:
                self.stdout.write(json.dumps(output))

    @staticmethod
    def _score_texts(scorer, texts: list[tuple]) -> list:
        """Results in order; a text the scorer still refuses (e.g. it yields no token) becomes
        its error message and the rest are scored."""
        bodies = [body for _, _, body in texts]
        results: list = [None] * len(bodies)
        pending = list(range(len(bodies)))
        while pending:
            try:
                scored = scorer.score([bodies[i] for i in pending])
            except ScoringError as exc:
                index = getattr(exc, "index", None)
                if index is None:
                    raise CommandError(str(exc)) from exc
                results[pending[index]] = f"line {texts[pending[index]][1]}: {exc.reason}"
                pending.pop(index)
                continue
            for i, result in zip(pending, scored, strict=True):
                results[i] = result
            pending = []
        return results
