"""Figures of the monitoring pages as text, always with their size: never a bare number."""

from __future__ import annotations

from collections.abc import Mapping

from django import template

from monitoring.agreement import MIN_PAIRS, Kappa
from monitoring.stats import Rate

register = template.Library()


def _percent(value: float) -> str:
    return f"{100 * value:.0f} %"


@register.filter
def rate_text(rate: Rate | Mapping, small_below: int = 0) -> str:
    """A rate as "7 of 9: 78 % [45-94 %]", "no data" at n = 0, "n too small" below `small_below`.
    Takes a Rate or its as_dict() (stored results)."""
    if isinstance(rate, Mapping):
        rate = Rate(**rate)
    if rate.n == 0 or rate.rate is None:
        return "no data"
    interval = f"[{100 * rate.low:.0f}-{100 * rate.high:.0f} %]"
    text = f"{rate.successes} of {rate.n}: {_percent(rate.rate)} {interval}"
    return f"{text}, n too small" if rate.n < small_below else text


@register.filter
def agreement_text(rate: Rate) -> str:
    """A percent agreement, marked n too small below MIN_PAIRS pairs like kappa."""
    return rate_text(rate, MIN_PAIRS)


@register.filter
def kappa_text(kappa: Kappa) -> str:
    """Kappa as "0.62 [0.31, 0.93], n = 14, n too small", or why there is none."""
    if kappa.n == 0:
        return "no pairs"
    if kappa.kappa is None:
        return f"undefined (one label for every pair), n = {kappa.n}"
    text = f"{kappa.kappa:.2f} [{kappa.low:.2f}, {kappa.high:.2f}], n = {kappa.n}"
    return f"{text}, n too small" if kappa.small else text


@register.filter
def seconds_text(seconds: float | None, n: int = 0) -> str:
    if seconds is None:
        return "no timing"
    return f"{seconds:.1f} s (n = {n})" if seconds < 10 else f"{seconds:.0f} s (n = {n})"


@register.filter
def per_day(value: float | None) -> str:
    """A signed change per day: "+3.2 a day", "-0.5 a day"."""
    if value is None:
        return "n/a"
    return f"{value:+.1f} a day"
