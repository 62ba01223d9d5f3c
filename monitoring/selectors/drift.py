"""Reads over the daily roll-up of scored messages (monitoring.models.MessageDayRollup): message
length against the training corpus, score-distribution shift, rules against the model, and
explanation health. Periods are by the messages' `received_at` (UTC)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import date

from django.conf import settings

from explanations.faithfulness import PASS_RULE
from explanations.models import CanaryCheck
from monitoring import stats
from monitoring.constants import FLAGGED_ROUTES, RULE_ONLY_ROUTES, SCORE_REFERENCE_MIN_MESSAGES
from monitoring.length_reference import length_reference_ensure
from monitoring.models import MessageDayRollup
from monitoring.selectors.common import activation_times, claim_types, period_bounds, version_dict
from monitoring.timeline import build_series, period_start
from scoring.constants import RouteReason
from scoring.models import ModelVersion


def _rows(version: ModelVersion, *fields: str) -> list[dict]:
    return list(
        MessageDayRollup.objects.filter(model_version=version)
        .order_by("day")
        .values("day", "route_reason", "predicted_claim_type_id", *fields)
    )


def _add_lists(a: list[int], b: list[int]) -> list[int]:
    if not a:
        return list(b)
    if not b:
        return list(a)
    return [x + y for x, y in zip(a, b, strict=True)]


def _by_period(daily: dict[date, dict], period: str, add: Callable[[dict, dict], dict]) -> dict[date, dict]:
    grouped: dict[date, dict] = {}
    for day in sorted(daily):
        start = period_start(day, period)
        grouped[start] = add(grouped[start], daily[day]) if start in grouped else daily[day]
    return grouped


# --- Message length -----------------------------------------------------------------------------


def length_drift(*, version: ModelVersion | None, period: str) -> dict:
    """Per period: the share of messages longer than the training corpus's 99th percentile (with
    its Wilson interval) and the PSI of the length distribution against the corpus's (decile bins
    of the corpus, stats.PSI_EPSILON for empty bins)."""
    result: dict = {"period": period, "model_version": version_dict(version), "reference": None, "points": []}
    if version is None:
        return result
    reference = length_reference_ensure(corpus_sha256=version.corpus_sha256)
    result["reference"] = {
        "available": reference.available,
        "reason": reference.reason,
        "corpus_sha256": reference.corpus_sha256,
        "rows": reference.rows,
        "p99_chars": reference.p99_chars,
        "edges": reference.edges,
        "proportions": reference.proportions,
        "psi_epsilon": stats.PSI_EPSILON,
    }
    daily: dict[date, dict] = {}
    for row in _rows(version, "messages", "longer_than_p99", "length_histogram", "length_reference_id"):
        usable = reference.available and row["length_reference_id"] == reference.pk
        entry = daily.setdefault(row["day"], {"messages": 0, "longer": 0, "histogram": []})
        entry["messages"] += row["messages"]
        if usable:
            entry["longer"] += row["longer_than_p99"]
            entry["histogram"] = _add_lists(entry["histogram"], row["length_histogram"])

    def add(a: dict, b: dict) -> dict:
        return {
            "messages": a["messages"] + b["messages"],
            "longer": a["longer"] + b["longer"],
            "histogram": _add_lists(a["histogram"], b["histogram"]),
        }

    for start, entry in sorted(_by_period(daily, period, add).items()):
        measured = sum(entry["histogram"])
        share = stats.rate(entry["longer"], measured)
        result["points"].append(
            {
                **period_bounds(start, period),
                "messages": entry["messages"],
                "longer_than_p99": entry["longer"],
                "share": share.rate,
                "low": share.low,
                "high": share.high,
                "psi": stats.psi(reference.proportions, entry["histogram"]) if measured else None,
                "histogram": entry["histogram"],
            }
        )
    return result


# --- Score distribution ----------------------------------------------------------------------------


def score_drift(*, version: ModelVersion | None, period: str) -> dict:
    """Per period: the PSI of the routing scores' distribution (bins: stats.SCORE_EDGES) against
    the reference window of its activation segment (the first MONITORING_REFERENCE_DAYS days of
    data after the activation, extended until it holds SCORE_REFERENCE_MIN_MESSAGES messages;
    see monitoring.timeline)."""
    result: dict = {
        "period": period,
        "model_version": version_dict(version),
        "edges": list(stats.SCORE_EDGES),
        "reference_days": settings.MONITORING_REFERENCE_DAYS,
        "psi_epsilon": stats.PSI_EPSILON,
        "points": [],
        "references": [],
    }
    if version is None:
        return result
    daily: dict[date, list[int]] = {}
    for row in _rows(version, "score_histogram"):
        daily[row["day"]] = _add_lists(daily.get(row["day"], []), row["score_histogram"])
    series = build_series(
        daily,
        period=period,
        activations=activation_times([version.pk]).get(version.pk, []),
        add=_add_lists,
        zero=list,
        reference_days=settings.MONITORING_REFERENCE_DAYS,
        min_count=SCORE_REFERENCE_MIN_MESSAGES,
        count=sum,
    )
    for segment, (window, histogram) in series.references.items():
        result["references"].append(
            {
                "segment": segment,
                "from": window.first_day.isoformat(),
                "to": window.end.isoformat(),
                "messages": sum(histogram),
                "histogram": histogram,
            }
        )
    for point in series.points:
        reference = series.references[point.segment][1]
        result["points"].append(
            {
                **period_bounds(point.start, period),
                "segment": point.segment,
                "is_reference": point.is_reference,
                "messages": sum(point.counts),
                "psi": stats.psi(reference, point.counts),
                "histogram": point.counts,
            }
        )
    return result


# --- Rules against the model ---------------------------------------------------------------------------


def rules_vs_model(*, version: ModelVersion | None, period: str) -> dict:
    """Per claim type and period: of the messages a rule of that type matched, the share the model
    did not flag; of the messages the model flagged as that type, the share no rule matched. New
    phrasings show up here first (as flags no rule explains, or rule hits the model misses)."""
    types = claim_types()
    result: dict = {"period": period, "model_version": version_dict(version), "series": []}
    if version is None:
        return result
    zero = {"rule_hits": 0, "rule_hits_not_flagged": 0, "model_flags": 0, "flags_without_rule": 0}
    daily: dict[str, dict[date, dict]] = {ct.code: {} for ct in types}
    code_of = {ct.pk: ct.code for ct in types}
    for row in _rows(version, "messages", "rule_hits"):
        for code, hits in row["rule_hits"].items():
            if code not in daily:
                continue
            entry = daily[code].setdefault(row["day"], dict(zero))
            entry["rule_hits"] += hits
            if row["route_reason"] in RULE_ONLY_ROUTES:
                entry["rule_hits_not_flagged"] += hits
        if row["route_reason"] in FLAGGED_ROUTES and row["predicted_claim_type_id"] in code_of:
            entry = daily[code_of[row["predicted_claim_type_id"]]].setdefault(row["day"], dict(zero))
            entry["model_flags"] += row["messages"]
            if row["route_reason"] == RouteReason.MODEL_FLAG:
                entry["flags_without_rule"] += row["messages"]

    def add(a: dict, b: dict) -> dict:
        return {key: a[key] + b[key] for key in zero}

    for ct in types:
        points = []
        for start, entry in sorted(_by_period(daily[ct.code], period, add).items()):
            missed = stats.rate(entry["rule_hits_not_flagged"], entry["rule_hits"])
            unexplained = stats.rate(entry["flags_without_rule"], entry["model_flags"])
            points.append(
                {
                    **period_bounds(start, period),
                    **entry,
                    "rule_hits_not_flagged_rate": missed.rate,
                    "rule_hits_not_flagged_low": missed.low,
                    "rule_hits_not_flagged_high": missed.high,
                    "flags_without_rule_rate": unexplained.rate,
                    "flags_without_rule_low": unexplained.low,
                    "flags_without_rule_high": unexplained.high,
                }
            )
        result["series"].append({"claim_type": ct.code, "name": ct.name, "points": points})
    return result


# --- Explanations ------------------------------------------------------------------------------------------


def _add_outcomes(a: dict, b: dict) -> dict:
    merged = {method: dict(values) for method, values in a.items()}
    for method, values in b.items():
        target = merged.setdefault(method, {"computed": 0, "passed": 0, "failed": 0})
        for key in ("computed", "passed", "failed"):
            target[key] += values.get(key, 0)
    return merged


def _outcome_rates(outcomes: dict) -> dict:
    return {
        method: {**values, **stats.rate(values["passed"], values["computed"]).as_dict()}
        for method, values in sorted(outcomes.items())
    }


def explanation_health(*, version: ModelVersion | None, period: str) -> dict:
    """The faithfulness pass rate of the explanations of routed messages, per method: per period
    for one version, and in total per version; with the canary checks recorded at activations."""
    result: dict = {
        "period": period,
        "model_version": version_dict(version),
        "pass_rule": PASS_RULE,
        "points": [],
        "per_version": [],
        "canary_checks": [],
    }
    totals: dict[int, dict] = defaultdict(dict)
    for version_id, outcomes in MessageDayRollup.objects.exclude(explanations={}).values_list(
        "model_version_id", "explanations"
    ):
        totals[version_id] = _add_outcomes(totals[version_id], outcomes)
    names = dict(ModelVersion.objects.filter(pk__in=list(totals)).values_list("pk", "name"))
    result["per_version"] = [
        {"model_version": {"id": vid, "name": names.get(vid)}, "methods": _outcome_rates(outcomes)}
        for vid, outcomes in sorted(totals.items())
    ]
    for check in CanaryCheck.objects.select_related("model_version", "previous_version").order_by(
        "-created_at"
    )[:20]:
        result["canary_checks"].append(
            {
                "model_version": {"id": check.model_version_id, "name": check.model_version.name},
                "previous_version": (
                    {"id": check.previous_version_id, "name": check.previous_version.name}
                    if check.previous_version_id
                    else None
                ),
                "created_at": check.created_at.isoformat(),
                "pass_rates": check.pass_rates,
                "rank_correlation": check.rank_correlation,
                "findings": len(check.findings or []),
            }
        )
    if version is None:
        return result
    daily: dict[date, dict] = {}
    for row in _rows(version, "explanations"):
        if row["explanations"]:
            daily[row["day"]] = _add_outcomes(daily.get(row["day"], {}), row["explanations"])
    for start, outcomes in sorted(_by_period(daily, period, _add_outcomes).items()):
        result["points"].append({**period_bounds(start, period), "methods": _outcome_rates(outcomes)})
    return result
