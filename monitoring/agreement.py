"""Agreement between two reviewers of the same messages, pure (no Django): percent agreement with
its Wilson interval, and Cohen's kappa with an analytic 95 % interval.

A pair is two labels given to one message, one per reviewer; a label is the claim type for a
claim and "no_claim" otherwise (five nominal categories), so two claims of different types are a
disagreement.

Cohen's kappa (Cohen 1960):

    kappa = (p_o - p_e) / (1 - p_e)

with p_o the share of pairs that agree and p_e = sum_k p_k. * p_.k the agreement expected by chance
from each side's own label shares (the first label of each pair is the row, the second the column).

Its interval is analytic, not bootstrapped: the large-sample standard error of Fleiss, Cohen and
Everitt (1969), with p_ij the table's cell shares, p_i. the row and p_.j the column shares,

    var = [ sum_i p_ii (1 - (p_i. + p_.i)(1 - kappa))^2
            + (1 - kappa)^2 sum_{i != j} p_ij (p_.i + p_j.)^2
            - (kappa - p_e (1 - kappa))^2 ] / (n (1 - p_e)^2)

and kappa +- z * sqrt(var), clipped to [-1, 1]. It rests on the normal approximation, which is poor
for few pairs: below MIN_PAIRS pairs a figure is marked `small` and the page says "n too small"
beside the interval. When p_e = 1 (both sides gave one and the same label to every pair) kappa is
0/0 and is None, as is everything of an empty table. Tested against tables worked by hand and
against scikit-learn's cohen_kappa_score (tests/monitoring/test_agreement.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from monitoring.stats import Z95, Rate, rate

# Fewer pairs than this: the kappa interval's normal approximation is not to be trusted.
MIN_PAIRS = 20
KAPPA_INTERVAL = (
    "Cohen's kappa with an analytic 95 % interval (large-sample standard error of Fleiss, Cohen and "
    f"Everitt 1969, clipped to [-1, 1]); fewer than {MIN_PAIRS} pairs are marked n too small. Percent "
    "agreement with its Wilson 95 % interval."
)

Pair = tuple[str, str]


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa of n pairs with its interval (see the module docstring)."""

    n: int
    observed: float
    expected: float
    kappa: float | None
    se: float | None
    low: float | None
    high: float | None

    @property
    def small(self) -> bool:
        return self.n < MIN_PAIRS

    def as_dict(self) -> dict:
        return {
            "n": self.n,
            "observed": self.observed,
            "expected": self.expected,
            "kappa": self.kappa,
            "se": self.se,
            "low": self.low,
            "high": self.high,
            "small": self.small,
        }


def confusion(
    pairs: Iterable[Pair], labels: Sequence[str] | None = None
) -> tuple[list[str], list[list[int]]]:
    """(labels, table): table[i][j] counts pairs labelled labels[i] first and labels[j] second.
    Without `labels`, the labels that occur, sorted."""
    counts = Counter(pairs)
    if labels is None:
        labels = sorted({label for pair in counts for label in pair})
    index = {label: i for i, label in enumerate(labels)}
    unknown = {label for pair in counts for label in pair if label not in index}
    if unknown:
        raise ValueError(f"labels {sorted(unknown)} are not in {list(labels)}")
    table = [[0] * len(labels) for _ in labels]
    for (first, second), count in counts.items():
        table[index[first]][index[second]] += count
    return list(labels), table


def percent_agreement(pairs: Iterable[Pair], *, z: float = Z95) -> Rate:
    """Share of pairs whose two labels are the same, with its Wilson interval."""
    n = agree = 0
    for first, second in pairs:
        n += 1
        agree += first == second
    return rate(agree, n, z=z)


def kappa_from_table(table: Sequence[Sequence[int]], *, z: float = Z95) -> Kappa:
    """Cohen's kappa and its interval from a square table of counts."""
    size = len(table)
    if any(len(row) != size for row in table):
        raise ValueError("the table must be square")
    if any(count < 0 for row in table for count in row):
        raise ValueError("counts must be >= 0")
    n = sum(sum(row) for row in table)
    if n == 0:
        return Kappa(0, 0.0, 0.0, None, None, None, None)
    p = [[count / n for count in row] for row in table]
    rows = [sum(row) for row in p]
    cols = [sum(p[i][j] for i in range(size)) for j in range(size)]
    observed = sum(p[i][i] for i in range(size))
    expected = sum(rows[i] * cols[i] for i in range(size))
    if math.isclose(expected, 1.0):
        return Kappa(n, observed, expected, None, None, None, None)
    kappa = (observed - expected) / (1.0 - expected)
    diagonal = sum(p[i][i] * (1.0 - (rows[i] + cols[i]) * (1.0 - kappa)) ** 2 for i in range(size))
    off = sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in range(size) for j in range(size) if i != j)
    variance = (diagonal + (1.0 - kappa) ** 2 * off - (kappa - expected * (1.0 - kappa)) ** 2) / (
        n * (1.0 - expected) ** 2
    )
    se = math.sqrt(max(variance, 0.0))  # exactly 0 at perfect agreement; never below by rounding
    return Kappa(n, observed, expected, kappa, se, max(-1.0, kappa - z * se), min(1.0, kappa + z * se))


def cohen_kappa(pairs: Iterable[Pair], *, z: float = Z95) -> Kappa:
    """Cohen's kappa and its interval of `pairs` (first label against second)."""
    _, table = confusion(pairs)
    return kappa_from_table(table, z=z)
