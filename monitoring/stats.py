"""The monitoring statistics, pure (no Django): rates with Wilson intervals, the difference of
two rates, the population stability index, histograms, the recall estimator and the alert rule.

Every figure on the monitoring page comes from one of these functions; each is tested against
values worked by hand (tests/monitoring/test_stats.py).

Conventions
- A rate of 0 out of 0 is None ("no data"), never 0.
- Intervals are two-sided 95 % (z = 1.959964) unless a caller passes another z.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal

# PSI: an empty bin would make ln(a/e) infinite, so every proportion is floored at this value
# before the sum. Proportions are not renormalised after flooring (the effect is < bins * eps).
PSI_EPSILON = 1e-4
# The usual reading of a PSI: below 0.1 stable, 0.1-0.25 a moderate shift, above 0.25 a major one.
PSI_MODERATE = 0.1
PSI_MAJOR = 0.25


@dataclass(frozen=True)
class Rate:
    """successes out of n, the rate and its Wilson interval (all None when n == 0)."""

    successes: int
    n: int
    rate: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict:
        return {
            "successes": self.successes,
            "n": self.n,
            "rate": self.rate,
            "low": self.low,
            "high": self.high,
        }


def _check_counts(successes: int, n: int) -> None:
    if n < 0 or successes < 0:
        raise ValueError(f"counts must be >= 0 (got {successes} of {n})")
    if successes > n:
        raise ValueError(f"successes ({successes}) cannot exceed n ({n})")


def wilson_interval(successes: int, n: int, *, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (Wilson 1927):

        centre = (p + z²/2n) / (1 + z²/n)
        half   = z / (1 + z²/n) * sqrt(p(1-p)/n + z²/4n²)

    Unlike p ± z·sqrt(p(1-p)/n) it stays inside [0, 1] and is honest at 0 of n (0 of 10 gives
    [0, 0.278], not [0, 0]). None when n == 0."""
    _check_counts(successes, n)
    if n == 0:
        return None
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = (z / denominator) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # The exact bounds are 0 at p = 0 and 1 at p = 1; do not let rounding move them.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def rate(successes: int, n: int, *, z: float = Z95) -> Rate:
    """successes / n with its Wilson interval."""
    interval = wilson_interval(successes, n, z=z)
    if interval is None:
        return Rate(successes, n, None, None, None)
    return Rate(successes, n, successes / n, interval[0], interval[1])


@dataclass(frozen=True)
class Difference:
    """p1 - p2 with Newcombe's hybrid score interval (None when either n is 0)."""

    difference: float
    low: float
    high: float


def rate_difference(x1: int, n1: int, x2: int, n2: int, *, z: float = Z95) -> Difference | None:
    """Interval for p1 - p2 built from the two Wilson intervals (Newcombe 1998, method 10):

        low  = (p1 - p2) - sqrt((p1 - l1)² + (u2 - p2)²)
        high = (p1 - p2) + sqrt((u1 - p1)² + (p2 - l2)²)

    where [l1, u1] and [l2, u2] are the Wilson intervals of p1 = x1/n1 and p2 = x2/n2."""
    first, second = wilson_interval(x1, n1, z=z), wilson_interval(x2, n2, z=z)
    if first is None or second is None:
        return None
    p1, p2 = x1 / n1, x2 / n2
    (l1, u1), (l2, u2) = first, second
    d = p1 - p2
    return Difference(
        difference=d,
        low=d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
        high=d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2),
    )


# --- The alert rule ------------------------------------------------------------------------------

MIN_PERIOD_COUNT = 5
MIN_REFERENCE_COUNT = 10
ALERT_RULE = (
    "An alert fires for a period when its disagreement rate is above the reference rate beyond "
    "both intervals: the lower end of Newcombe's 95 % interval for (period rate - reference rate), "
    "built from the two Wilson intervals, is above 0. The period needs at least "
    f"{MIN_PERIOD_COUNT} reviewed messages and the reference at least {MIN_REFERENCE_COUNT}."
)


@dataclass(frozen=True)
class AlertCheck:
    fires: bool
    difference: Difference | None
    reason: str


def alert_check(
    period_successes: int,
    period_n: int,
    reference_successes: int,
    reference_n: int,
    *,
    min_period: int = MIN_PERIOD_COUNT,
    min_reference: int = MIN_REFERENCE_COUNT,
    z: float = Z95,
) -> AlertCheck:
    """ALERT_RULE applied to one period against its reference. A one-sided reading of a 95 %
    interval: under no change, a single period fires about 2.5 % of the time or less (less for
    small counts, where Wilson intervals are wide)."""
    if period_n < min_period:
        return AlertCheck(False, None, f"too few reviewed messages in the period ({period_n} < {min_period})")
    if reference_n < min_reference:
        return AlertCheck(False, None, f"reference too small ({reference_n} < {min_reference})")
    difference = rate_difference(period_successes, period_n, reference_successes, reference_n, z=z)
    assert difference is not None  # both counts are positive here
    if difference.low > 0:
        return AlertCheck(True, difference, "rate above the reference beyond both intervals")
    return AlertCheck(False, difference, "within the reference's range")


# --- Histograms and the population stability index -------------------------------------------------


def bin_index(value: float, edges: Sequence[float]) -> int:
    """Bin of `value` for sorted inner `edges`: bin 0 is (-inf, e0), bin i is [e(i-1), e(i)),
    the last bin is [e(last), +inf). len(edges) + 1 bins in all."""
    return bisect_right(edges, value)


def histogram(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    counts = [0] * (len(edges) + 1)
    for value in values:
        counts[bin_index(value, edges)] += 1
    return counts


def proportions(counts: Sequence[int]) -> list[float] | None:
    total = sum(counts)
    if total <= 0:
        return None
    return [count / total for count in counts]


def psi(expected: Sequence[float], actual: Sequence[float], *, epsilon: float = PSI_EPSILON) -> float | None:
    """Population stability index of `actual` against `expected` over the same bins:

        PSI = sum_i (a_i - e_i) * ln(a_i / e_i)

    with a_i, e_i the bins' proportions (counts are normalised first), each floored at `epsilon`
    so that an empty bin does not make the sum infinite. None when either side is empty."""
    if len(expected) != len(actual):
        raise ValueError(f"PSI needs the same bins on both sides ({len(expected)} vs {len(actual)})")
    e, a = proportions(expected), proportions(actual)
    if e is None or a is None:
        return None
    total = 0.0
    for e_i, a_i in zip(e, a, strict=True):
        e_i, a_i = max(e_i, epsilon), max(a_i, epsilon)
        total += (a_i - e_i) * math.log(a_i / e_i)
    return total


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation between closest ranks (numpy's default, "type 7"):
    position h = (n - 1) q, value = x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h])."""
    if not sorted_values:
        raise ValueError("no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be within [0, 1], not {q}")
    h = (len(sorted_values) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (h - low) * (sorted_values[high] - sorted_values[low])


@dataclass(frozen=True)
class LengthReference:
    """A length distribution to compare traffic with: the 99th percentile, the decile edges
    (duplicates dropped, so a lumpy distribution can have fewer than 10 bins) and the share of
    the reference in each bin."""

    n: int
    p99: float
    edges: list[float]
    proportions: list[float]


def length_reference(lengths: Sequence[int], *, bins: int = 10) -> LengthReference:
    """Reference of a set of message lengths: p99 and `bins` quantile bins (see `quantile`)."""
    if not lengths:
        raise ValueError("no lengths to build a reference from")
    ordered = sorted(lengths)
    edges = sorted({quantile(ordered, i / bins) for i in range(1, bins)})
    counts = histogram(ordered, edges)
    return LengthReference(
        n=len(ordered),
        p99=quantile(ordered, 0.99),
        edges=edges,
        proportions=[count / len(ordered) for count in counts],
    )


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# Score bins for the score-distribution PSI: equal steps in logit space (edges at sigmoid(k) for
# k = -9..9), so the crowded ends near 0 and 1 are resolved as finely as the middle.
SCORE_EDGES: tuple[float, ...] = tuple(_sigmoid(k) for k in range(-9, 10))


# --- Precision and the recall estimator ------------------------------------------------------------


@dataclass(frozen=True)
class Stratum:
    """One routing stratum of a model version's messages: how many messages it holds, how many
    of them were reviewed, and how many of those the reviewer judged a claim (of the type in
    question)."""

    messages: int
    reviewed: int
    claims: int

    def __post_init__(self) -> None:
        _check_counts(self.claims, self.reviewed)
        if self.messages < 0:
            raise ValueError("messages must be >= 0")

    def estimated_claims(self, claim_rate: float | None = None) -> float:
        """messages x (claims / reviewed): the stratum's claims, scaled up from its reviews."""
        if self.messages == 0:
            return 0.0
        share = claim_rate if claim_rate is not None else self.claims / self.reviewed
        return self.messages * share


@dataclass(frozen=True)
class RecallEstimate:
    recall: float | None
    low: float | None
    high: float | None
    estimated_claims: float | None
    reason: str


RECALL_ESTIMATOR = (
    "Recall = flagged claims / all claims, with all claims estimated per routing stratum: flagged "
    "messages, rule hits below threshold, messages below threshold sent to review for a part that "
    "could not be read, and everything else below threshold (of which the QA "
    "sample is a uniform random draw). Each stratum's claims = its messages x the claim share among "
    "its reviewed messages. The interval comes from the Wilson 95 % interval of the QA sample's "
    "claim share (the upper end gives the lowest recall) and, for the messages sent to review for a "
    "part not read, from the claims seen and every one not yet reviewed; the other strata held at "
    "their observed shares: with a small QA sample, that share is by far the largest uncertainty. The "
    "interval never goes below the claims seen nor above those plus every unreviewed message."
)


def recall_estimate(
    *, flagged: Stratum, rule_only: Stratum, qa: Stratum, unread: Stratum | None = None, z: float = Z95
) -> RecallEstimate:
    """Estimated recall at the threshold from reviewed messages (see RECALL_ESTIMATOR). `unread`:
    the messages below threshold without a rule hit sent to review for a part not read (none
    when not given). They are reviewed last (the queue is ordered by score), and those reviewed
    first are not a random draw of them, so they are a stratum of their own whose unreviewed
    messages widen the interval to their bounds (none of them a claim, or every one), and which
    counts only its claims seen while none is reviewed: pooled with the rule hits, their few
    early reviews were weighted by the rule hits' claim share."""
    unread = unread or Stratum(0, 0, 0)
    for name, stratum in (("flagged", flagged), ("rule-hit", rule_only), ("below-threshold", qa)):
        if stratum.messages > 0 and stratum.reviewed == 0:
            return RecallEstimate(None, None, None, None, f"no reviewed {name} messages yet")
    caught = flagged.estimated_claims()
    unread_point = unread.estimated_claims() if unread.reviewed else 0.0
    unread_unreviewed = unread.messages - unread.reviewed
    ruled = rule_only.estimated_claims()
    rules = ruled + unread_point
    missed = qa.estimated_claims()
    total = caught + rules + missed
    if total == 0:
        return RecallEstimate(None, None, None, 0.0, "no claims among the reviewed messages")
    recall_point = caught / total
    interval = wilson_interval(qa.claims, qa.reviewed, z=z) if qa.messages > 0 else (0.0, 0.0)
    assert interval is not None
    low_share, high_share = interval
    # The stratum holds at least the claims seen and at most those plus every unreviewed message
    # (so a fully reviewed stratum - a census - has no sampling uncertainty left).
    unreviewed = qa.messages - qa.reviewed
    worst = (
        caught
        + ruled
        + unread.claims
        + unread_unreviewed
        + min(qa.estimated_claims(high_share), qa.claims + unreviewed)
    )
    best = caught + ruled + unread.claims + max(qa.estimated_claims(low_share), qa.claims)
    reason = "estimated from the QA sample"
    if unread_unreviewed:
        reason += f"; {unread_unreviewed} messages with a part not read not reviewed yet"
    return RecallEstimate(
        recall=recall_point,
        low=caught / worst if worst else None,
        high=caught / best if best else None,
        estimated_claims=total,
        reason=reason,
    )
