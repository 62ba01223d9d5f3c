"""The training-corpus length reference: the length distribution of the train split a model was
trained on, computed once per corpus digest and stored (LengthReference), which the length-drift
chart compares live traffic with."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction

from monitoring import stats
from monitoring.models import LengthReference
from scoring.models import ModelVersion


def _corpus_candidates(corpus_sha256: str) -> list[Path]:
    """Where a corpus with this digest may be: the configured corpus, and the corpus path each
    artifact trained on it recorded in its manifest."""
    from scoring.classifier.artifacts import read_manifest
    from scoring.errors import ArtifactError

    paths = [Path(settings.CORPUS_PATH)]
    for artifact in ModelVersion.objects.filter(corpus_sha256=corpus_sha256).values_list(
        "artifact_path", flat=True
    ):
        try:
            recorded = read_manifest(artifact).get("corpus_path")
        except (ArtifactError, OSError, ValueError):  # a missing artifact offers no candidate
            continue
        if recorded:
            paths.append(Path(recorded))
    unique: list[Path] = []
    for path in paths:
        if path not in unique:
            unique.append(path)
    return unique


def length_reference_ensure(*, corpus_sha256: str) -> LengthReference:
    """The length reference of the corpus with this digest, computed once from its train split
    and stored. When no file with that digest can be found, an unavailable reference is stored
    with the reason (so the search is not repeated on every read)."""
    existing = LengthReference.objects.filter(corpus_sha256=corpus_sha256).first()
    if existing is not None:
        return existing
    from scoring.classifier.data import corpus_sha256 as file_digest
    from scoring.corpus.generator import read_jsonl

    values: dict = {
        "available": False,
        "reason": f"no corpus file with sha256 {corpus_sha256[:12]}… was found",
    }
    for path in _corpus_candidates(corpus_sha256):
        if not path.is_file() or file_digest(path) != corpus_sha256:
            continue
        lengths = [
            len(row["body"]) for row in read_jsonl(path, validate=False) if row.get("split") == "train"
        ]
        if not lengths:
            values = {
                "available": False,
                "reason": f"{path.name} has no train split",
                "corpus_path": str(path),
            }
            break
        reference = stats.length_reference(lengths)
        values = {
            "available": True,
            "reason": "",
            "corpus_path": str(path),
            "rows": reference.n,
            "p99_chars": reference.p99,
            "edges": reference.edges,
            "proportions": reference.proportions,
        }
        break
    try:
        with transaction.atomic():
            return LengthReference.objects.create(corpus_sha256=corpus_sha256, **values)
    except IntegrityError:  # a concurrent refresh stored it first
        return LengthReference.objects.get(corpus_sha256=corpus_sha256)
