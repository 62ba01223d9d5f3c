"""What the scoring step (scoring.services.pipeline) and shadow scoring (scoring.services.shadow)
share, so that neither imports the other: ids split into task-sized batches, and the unsaved
Prediction a scorer result becomes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from scoring.models import Message, ModelVersion, Prediction
from scoring.segmentation import segments_json


def chunks(ids: Sequence[int], size: int) -> Iterable[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def prediction_from_result(
    message: Message,
    version: ModelVersion,
    result,
    per_message_ms: float,
    claim_types,
    *,
    shadow: bool = False,
) -> Prediction:
    """An unsaved Prediction of `version` from a Scorer result, flagged at the version's threshold."""
    return Prediction(
        message=message,
        model_version=version,
        score=float(result.score),
        claim_type=claim_types.get(result.claim_type),
        probabilities={k: float(v) for k, v in result.probabilities.items()},
        window_scores=[
            {"start": w.start, "end": w.end, "score": float(w.score), "kind": w.kind, "routes": w.routes}
            for w in result.windows
        ],
        segments=segments_json(getattr(result, "segments", None) or []),
        context=dict(getattr(result, "context", None) or {}),
        threshold=version.threshold,
        flagged=float(result.score) >= version.threshold,
        is_shadow=shadow,
        latency_ms=per_message_ms,
    )
