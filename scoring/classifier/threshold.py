"""The one threshold rule of Claimwatch, pure.

Rule: the threshold is the HIGHEST score t such that flagging every message with score >= t
recalls at least `target_recall` (default 0.95, settings.THRESHOLD_TARGET_RECALL) of the claims
in the validation split. The highest such t keeps the most precision for that recall. It is
chosen once, on val, when a model is trained, and stored on the model version; the test split
only reports what that threshold does. A different threshold is a new model version.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

DEFAULT_TARGET_RECALL = 0.95


def describe_rule(target_recall: float = DEFAULT_TARGET_RECALL) -> str:
    """The rule in words, as stored on a model version and shown in the UI."""
    return (
        f"highest threshold with claim recall >= {target_recall:.2f} on the validation split "
        "(a message is flagged when its score >= threshold)"
    )


def choose_threshold(
    scores: Sequence[float], labels: Sequence[int], *, target_recall: float = DEFAULT_TARGET_RECALL
) -> float:
    """The highest t with recall(score >= t) >= target_recall. `labels` are 1 (claim) / 0."""
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels.")
    if not 0.0 < target_recall <= 1.0:
        raise ValueError(f"target_recall={target_recall} must be in (0, 1].")
    positives = sorted((float(s) for s, y in zip(scores, labels, strict=True) if y == 1), reverse=True)
    if not positives:
        raise ValueError("The validation split has no claims: no threshold can be chosen by recall.")
    # The k highest-scoring claims must be flagged; the k-th one's score is the highest such t.
    needed = max(1, math.ceil(target_recall * len(positives) - 1e-9))
    return min(1.0, max(0.0, positives[needed - 1]))
