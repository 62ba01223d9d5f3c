"""One Scorer per model artifact per process, loaded lazily on first use.

Nothing is loaded at import time: Celery forks its workers from a parent process, and a model
loaded before the fork would be copied into every child (and CUDA cannot cross a fork). The
first `get_scorer(version)` in a worker process loads the artifact (after checking its sha256),
later calls return the same Scorer. Versions that share an artifact (threshold variants) share
the Scorer; the threshold to route with is always the ModelVersion's own, and every call registers
it with the Scorer (`watch_threshold`), so that in bfloat16 the windows near it are re-scored in
float32 (scoring.classifier.scorer, "Decisions in bfloat16").
"""

from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings

from scoring.classifier.artifacts import verify_artifact
from scoring.classifier.scorer import Scorer
from scoring.errors import ArtifactError, ModelNotReady

_lock = threading.Lock()
_scorers: dict[tuple, Scorer] = {}


def _key(model_version) -> tuple:
    return (
        model_version.artifact_sha256,
        str(Path(model_version.artifact_path).resolve()),
        settings.SCORING_DEVICE,
        settings.SCORING_PRECISION,
        settings.WINDOW_TOKENS,
        settings.WINDOW_STRIDE,
        settings.TOKEN_BUDGET,
        settings.MAX_BODY_CHARS,
    )


def get_scorer(model_version) -> Scorer:
    """The process's Scorer for this ModelVersion's artifact, loaded once. Raises ModelNotReady
    when the artifact is missing, corrupt (sha256 mismatch) or cannot be loaded."""
    key = _key(model_version)
    scorer = _scorers.get(key)
    if scorer is not None:
        scorer.watch_threshold(model_version.threshold)
        return scorer
    with _lock:
        scorer = _scorers.get(key)
        if scorer is None:
            try:
                verify_artifact(model_version.artifact_path, model_version.artifact_sha256)
            except ArtifactError as exc:
                raise ModelNotReady(f"Model version {model_version.name}: {exc}") from exc
            scorer = Scorer(
                model_version.artifact_path,
                device=settings.SCORING_DEVICE,
                window_tokens=settings.WINDOW_TOKENS,
                stride=settings.WINDOW_STRIDE,
                token_budget=settings.TOKEN_BUDGET,
                max_chars=settings.MAX_BODY_CHARS,
                precision=settings.SCORING_PRECISION,
            )
            _scorers[key] = scorer
    scorer.watch_threshold(model_version.threshold)
    return scorer


def clear_scorers() -> None:
    """Forget every loaded Scorer (tests; or after an artifact was replaced on disk)."""
    with _lock:
        _scorers.clear()
