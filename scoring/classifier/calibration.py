"""Temperature scaling of the classifier (Guo et al. 2017), fitted on the validation split and
folded into the classification head, so that a score of 0.8 means about 8 claims in 10.

A fine-tuned classifier is over-confident: on its own training families its scores sit at 0.999,
and a message it is unsure of still scores 0.99. Dividing the logits by one temperature T > 1
softens every probability without changing any argmax (the claim type) or the order of scores
within a window. T is chosen to minimise the log loss of the MESSAGE score (1 - P(no_claim) of
its best routing window, what routes and what a reviewer sees) against the label, over the
validation split: family-disjoint from train, so T reflects how the model does on phrasings it
has not seen. Folding T into the head (weight and bias divided by T) makes every consumer of
the model (the Scorer, Integrated Gradients, the faithfulness check, shadow scoring) use the
calibrated scores with no code of its own; the artifact records T.

Pure: numpy for the fit; torch only to fold the head.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# log10(T) searched on a grid, then refined: T in [0.25, 32].
_LOG_GRID = np.linspace(math.log(0.25), math.log(32.0), 57)
_EPS = 1e-7


def tempered_claim_scores(probabilities: np.ndarray, temperature: float) -> np.ndarray:
    """Claim score (sum of the claim classes) of each window's probabilities [n, labels] once its
    logits are divided by `temperature` (log-probabilities stand in for the logits: a constant
    shift per row does not change a softmax)."""
    logits = np.log(np.maximum(probabilities.astype(np.float64), 1e-30)) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    return exp[:, 1:].sum(axis=1) / exp.sum(axis=1)


def message_scores(window_scores: np.ndarray, offsets: Sequence[int]) -> np.ndarray:
    """Max over each message's windows; `offsets` = cumulative window counts [0, n1, n1+n2, ...]."""
    return np.maximum.reduceat(window_scores, np.asarray(offsets[:-1], dtype=np.int64))


def _log_loss(scores: np.ndarray, labels: np.ndarray) -> float:
    p = np.clip(scores, _EPS, 1 - _EPS)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))


def fit_temperature(
    probabilities: np.ndarray, offsets: Sequence[int], labels: Sequence[int]
) -> tuple[float, dict]:
    """The temperature minimising the message-level log loss; returns (T, report) where the
    report has the log loss before (T = 1) and after."""
    y = np.asarray(labels, dtype=np.float64)
    if len(y) != len(offsets) - 1:
        raise ValueError(f"{len(y)} labels but {len(offsets) - 1} messages")
    if y.min() == y.max():
        raise ValueError("temperature scaling needs both claims and non-claims in the validation split")

    def loss(log_t: float) -> float:
        return _log_loss(message_scores(tempered_claim_scores(probabilities, math.exp(log_t)), offsets), y)

    losses = [loss(t) for t in _LOG_GRID]
    best = int(np.argmin(losses))
    low = _LOG_GRID[max(best - 1, 0)]
    high = _LOG_GRID[min(best + 1, len(_LOG_GRID) - 1)]
    # golden-section search inside the bracket around the best grid point
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    for _ in range(40):
        if loss(c) < loss(d):
            b = d
        else:
            a = c
        c, d = b - ratio * (b - a), a + ratio * (b - a)
    log_t = (a + b) / 2
    temperature = math.exp(log_t)
    return temperature, {
        "temperature": temperature,
        "val_log_loss_before": loss(0.0),
        "val_log_loss_after": loss(log_t),
        "fitted_on": "validation split, message score (best routing window) against the label",
    }


# the length penalty is searched on [0, 3] log-odds per unit of ln(windows)
_PENALTY_GRID = np.linspace(0.0, 3.0, 301)


def length_discounted(scores, n_windows, penalty: float) -> np.ndarray:
    """Message scores with their log-odds lowered by penalty * ln(n routing windows)."""
    scores = np.asarray(scores, dtype=np.float64)
    if penalty == 0.0:
        return scores
    n = np.maximum(np.asarray(n_windows, dtype=np.float64), 1.0)
    p = np.clip(scores, 1e-12, 1 - 1e-12)
    return 1.0 / (1.0 + np.exp(-(np.log(p / (1 - p)) - penalty * np.log(n))))


def fit_length_penalty(
    scores: Sequence[float], n_windows: Sequence[int], labels: Sequence[int]
) -> tuple[float, dict]:
    """The penalty >= 0 minimising the log loss of the length-discounted message scores (the
    best routing window's, already tempered) against the labels; returns (penalty, report)."""
    y = np.asarray(labels, dtype=np.float64)
    if not len(y) == len(scores) == len(n_windows):
        raise ValueError(f"{len(scores)} scores, {len(n_windows)} window counts, {len(y)} labels")
    losses = [_log_loss(length_discounted(scores, n_windows, float(b)), y) for b in _PENALTY_GRID]
    best = int(np.argmin(losses))
    penalty = float(_PENALTY_GRID[best])
    return penalty, {
        "length_penalty": penalty,
        "val_log_loss_before_length": losses[0],
        "val_log_loss_after_length": losses[best],
        "length_fitted_on": "validation split, tempered message score and ln(routing windows)",
    }


def fold_temperature(model, temperature: float) -> None:
    """Divide the classification head's weight and bias by `temperature`, in place."""
    import torch

    head = model.classifier
    with torch.no_grad():
        head.weight.div_(temperature)
        if head.bias is not None:
            head.bias.div_(temperature)
