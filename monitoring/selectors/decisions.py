"""Reads over review decisions: disagreement per claim type and period, its alerts, precision and
recall from reviews, and the reviewer-vs-model confusion matrix.

Which decisions count ("effective" decisions): the latest decision on each message (a
correction supersedes the one it corrects; an escalation counts once it is decided), with a
verdict of claim or not a claim, on a message the model scored. A message drawn for a blind
double review (reviews.double_review) counts its first decision, not the second review, and after
a disagreement the compliance admin's final decision in place of the first. Its period is the UTC day or
week in which the decision was recorded.

Claim type of a decision, for the per-type series: a flagged message takes the model's
predicted type; a message the model did not flag but the reviewer judged a claim (a miss, seen
through a rule hit, the QA sample or a part not read) takes the reviewer's type; a message neither flagged nor
judged a claim has no type and counts only in the "all" series.

Disagreement = the reviewer's verdict (claim or not) differs from the model's flag. A claim type
mismatch (both say claim, different types) is counted on its own and is not a disagreement.

The figures are read from the decision roll-up (monitoring.models.DecisionDayRollup), which
holds exactly the effective decisions per day; `effective_decisions` is the same definition on
the decision table itself (the roll-up is tested against it).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from datetime import date

from django.conf import settings
from django.db.models import QuerySet, Sum

from monitoring import stats
from monitoring.constants import (
    ALL,
    BELOW_THRESHOLD_ROUTES,
    FLAGGED_ROUTES,
    NO_CLAIM,
    RULE_ONLY_ROUTES,
    UNREAD_PART_ROUTES,
)
from monitoring.models import DecisionDayRollup, MessageDayRollup
from monitoring.selectors.common import activation_times, claim_types, period_bounds, version_dict
from monitoring.timeline import build_series
from reviews.models import ReviewDecision, Verdict
from scoring.models import ModelVersion


def effective_decisions() -> QuerySet[ReviewDecision]:
    """The decisions the metrics count (see the module docstring)."""
    return ReviewDecision.objects.filter(
        verdict__in=[Verdict.CLAIM, Verdict.NO_CLAIM],
        agrees_with_model__isnull=False,
        superseded_by__isnull=True,
        # one decision per double-reviewed message: the first, until an admin's final one
        double_review_as_second__isnull=True,
        double_review_as_first__final_decision__isnull=True,
    )


@dataclass
class DisagreementCounts:
    n: int = 0
    disagreements: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    both_claim: int = 0
    type_mismatches: int = 0
    qa_sample: int = 0

    def __add__(self, other: DisagreementCounts) -> DisagreementCounts:
        return DisagreementCounts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


# What a decision roll-up row is counted by, besides its day and model version.
DECISION_FIELDS = (
    "model_flagged",
    "is_qa_sample",
    "unread_part",
    "verdict",
    "claim_type_id",
    "model_claim_type_id",
)


def decision_rows(version_ids: list[int] | None = None) -> list[dict]:
    """The decision roll-up's rows (one version's, or all): day, model version, model flag, QA
    sample flag, verdict, both claim types and the number of decisions."""
    rows = DecisionDayRollup.objects.filter(decisions__gt=0)
    if version_ids is not None:
        rows = rows.filter(model_version_id__in=version_ids)
    return list(rows.values("day", "model_version_id", *DECISION_FIELDS, "decisions"))


def _counts_of(row: dict) -> tuple[int | None, DisagreementCounts]:
    """(attributed claim type id, counts) of one roll-up row (see the module docstring)."""
    c = row["decisions"]
    flagged, claim = row["model_flagged"], row["verdict"] == Verdict.CLAIM
    attributed = row["model_claim_type_id"] if flagged else (row["claim_type_id"] if claim else None)
    mismatch = flagged and claim and row["model_claim_type_id"] is not None
    mismatch = mismatch and row["claim_type_id"] != row["model_claim_type_id"]
    return attributed, DisagreementCounts(
        n=c,
        disagreements=c if flagged != claim else 0,
        false_positives=c if flagged and not claim else 0,
        false_negatives=c if claim and not flagged else 0,
        both_claim=c if flagged and claim else 0,
        type_mismatches=c if mismatch else 0,
        qa_sample=c if row["is_qa_sample"] else 0,
    )


def daily_disagreement(
    version_ids: list[int] | None = None,
) -> dict[int, dict[str, dict[date, DisagreementCounts]]]:
    """{version id: {claim type code or "all": {day: counts}}}."""
    codes = {ct.pk: ct.code for ct in claim_types()}
    result: dict[int, dict[str, dict[date, DisagreementCounts]]] = defaultdict(lambda: defaultdict(dict))
    for row in decision_rows(version_ids):
        attributed, counts = _counts_of(row)
        by_key = result[row["model_version_id"]]
        keys = [ALL] if attributed is None else [codes.get(attributed, str(attributed)), ALL]
        for key in keys:
            by_key[key][row["day"]] = by_key[key].get(row["day"], DisagreementCounts()) + counts
    return result


def _rate_fields(successes: int, n: int) -> dict:
    r = stats.rate(successes, n)
    return {"rate": r.rate, "low": r.low, "high": r.high}


def _series_for(
    version: ModelVersion,
    key: str,
    name: str,
    daily: dict[date, DisagreementCounts],
    activations,
    period: str,
) -> dict:
    series = build_series(
        daily,
        period=period,
        activations=activations,
        add=lambda a, b: a + b,
        zero=DisagreementCounts,
        reference_days=settings.MONITORING_REFERENCE_DAYS,
        min_count=settings.MONITORING_REFERENCE_MIN_REVIEWED,
        count=lambda counts: counts.n,
    )
    references = {}
    for segment, (window, counts) in series.references.items():
        references[segment] = {
            "segment": segment,
            "from": window.first_day.isoformat(),
            "to": window.end.isoformat(),
            "n": counts.n,
            "disagreements": counts.disagreements,
            **_rate_fields(counts.disagreements, counts.n),
        }
    points, alerts = [], []
    for point in series.points:
        counts = point.counts
        reference = series.references[point.segment][1]
        check = (
            None
            if point.is_reference
            else stats.alert_check(counts.disagreements, counts.n, reference.disagreements, reference.n)
        )
        entry = {
            **period_bounds(point.start, period),
            "segment": point.segment,
            "is_reference": point.is_reference,
            **asdict(counts),
            **_rate_fields(counts.disagreements, counts.n),
            "type_mismatch_rate": stats.rate(counts.type_mismatches, counts.both_claim).rate,
            "alert": bool(check and check.fires),
            "difference_low": check.difference.low if check and check.difference else None,
        }
        points.append(entry)
        if check and check.fires:
            alerts.append(_alert(version, key, name, period, entry, references[point.segment]))
    return {
        "claim_type": key,
        "name": name,
        "points": points,
        "references": list(references.values()),
    }, alerts


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f} %"


def _alert(version: ModelVersion, key: str, name: str, period: str, point: dict, reference: dict) -> dict:
    span = "day" if period == "day" else "week"
    message = (
        f"{name}: disagreement {_percent(point['rate'])} ({point['disagreements']} of {point['n']}; "
        f"95 % CI {_percent(point['low'])} to {_percent(point['high'])}) in the {span} of {point['start']}, "
        f"above its reference {_percent(reference['rate'])} ({reference['disagreements']} of "
        f"{reference['n']}, {reference['from']} to {reference['to']}) for model {version.name}."
    )
    return {
        "model_version": version_dict(version),
        "claim_type": key,
        "claim_type_name": name,
        "period": period,
        "start": point["start"],
        "end": point["end"],
        "n": point["n"],
        "disagreements": point["disagreements"],
        "rate": point["rate"],
        "low": point["low"],
        "high": point["high"],
        "difference_low": point["difference_low"],
        "reference": reference,
        "message": message,
    }


def _series_keys() -> list[tuple[str, str]]:
    return [(ct.code, ct.name) for ct in claim_types()] + [(ALL, "All reviewed messages")]


def disagreement(*, version: ModelVersion | None, period: str) -> dict:
    """Disagreement per claim type (and overall) per period for one model version, with Wilson
    bands, the reference of each activation segment, and the alerts (stats.ALERT_RULE)."""
    result = {
        "period": period,
        "model_version": version_dict(version),
        "reference_days": settings.MONITORING_REFERENCE_DAYS,
        "reference_min_reviewed": settings.MONITORING_REFERENCE_MIN_REVIEWED,
        "alert_rule": stats.ALERT_RULE,
        "series": [],
        "alerts": [],
    }
    if version is None:
        return result
    daily = daily_disagreement([version.pk]).get(version.pk, {})
    activations = activation_times([version.pk]).get(version.pk, [])
    for key, name in _series_keys():
        series, alerts = _series_for(version, key, name, daily.get(key, {}), activations, period)
        result["series"].append(series)
        result["alerts"] += alerts
    return result


def alerts(*, period: str, version: ModelVersion | None = None) -> list[dict]:
    """Every alert of every model version (or of one), newest first."""
    version_ids = [version.pk] if version is not None else None
    daily = daily_disagreement(version_ids)
    versions = ModelVersion.objects.in_bulk(list(daily))
    activations = activation_times(list(daily))
    found: list[dict] = []
    for version_id, by_key in daily.items():
        for key, name in _series_keys():
            if key in by_key:
                _, fired = _series_for(
                    versions[version_id], key, name, by_key[key], activations.get(version_id, []), period
                )
                found += fired
    return sorted(found, key=lambda a: (a["start"], a["claim_type"]), reverse=True)


# --- Precision, recall and the confusion matrix -------------------------------------------------------


def _decision_table(version: ModelVersion) -> list[dict]:
    """The version's counted decisions by DECISION_FIELDS (flag, QA flag, part not read, verdict
    and both claim types), all days summed."""
    table: dict[tuple, int] = defaultdict(int)
    for row in decision_rows([version.pk]):
        table[tuple(row[f] for f in DECISION_FIELDS)] += row["decisions"]
    return [{**dict(zip(DECISION_FIELDS, key, strict=True)), "n": n} for key, n in table.items()]


STRATA = ("flagged", "rule_only", "unread_part", "below_threshold")


def _stratum_of(row: dict) -> str:
    if row["model_flagged"]:
        return "flagged"
    if row["is_qa_sample"]:
        return "below_threshold"
    return "unread_part" if row["unread_part"] else "rule_only"


def _message_counts(version: ModelVersion) -> tuple[dict[str, int], dict[int | None, int]]:
    """Messages per routing stratum, and flagged messages per predicted type (from the roll-up)."""
    strata = dict.fromkeys(STRATA, 0)
    flagged_by_type: dict[int | None, int] = defaultdict(int)
    rows = (
        MessageDayRollup.objects.filter(model_version=version)
        .values("route_reason", "predicted_claim_type_id")
        .annotate(n=Sum("messages"))
    )
    for row in rows:
        if row["route_reason"] in FLAGGED_ROUTES:
            strata["flagged"] += row["n"]
            flagged_by_type[row["predicted_claim_type_id"]] += row["n"]
        elif row["route_reason"] in RULE_ONLY_ROUTES:
            strata["rule_only"] += row["n"]
        elif row["route_reason"] in UNREAD_PART_ROUTES:
            strata["unread_part"] += row["n"]
        elif row["route_reason"] in BELOW_THRESHOLD_ROUTES:
            strata["below_threshold"] += row["n"]
    return strata, flagged_by_type


def _offline(version: ModelVersion) -> dict:
    """Precision and recall the version measured before deployment (its training metrics)."""
    offline = {}
    for key in ("val", "test_in_distribution", "test_novel_phrasing"):
        summary = (version.metrics or {}).get(key)
        if isinstance(summary, dict) and "overall" in summary:
            offline[key] = {
                "precision": summary["overall"].get("precision"),
                "recall": summary["overall"].get("recall"),
                "per_claim_type": {
                    code: {"recall": values.get("recall"), "precision": values.get("precision")}
                    for code, values in summary.get("per_claim_type", {}).items()
                },
            }
    return offline


def quality(*, version: ModelVersion | None) -> dict:
    """Precision at the threshold from reviewed flags and recall estimated from the QA sample,
    overall and per claim type, for one model version (stats.RECALL_ESTIMATOR)."""
    result: dict = {
        "model_version": version_dict(version),
        "estimator": stats.RECALL_ESTIMATOR,
        "strata": {},
        "overall": None,
        "per_claim_type": [],
    }
    if version is None:
        return result
    table = _decision_table(version)
    messages, flagged_by_type = _message_counts(version)
    reviewed = defaultdict(int)
    for row in table:
        reviewed[_stratum_of(row)] += row["n"]

    def claims(stratum: str, claim_type_id: int | None = None) -> int:
        return sum(
            row["n"]
            for row in table
            if _stratum_of(row) == stratum
            and row["verdict"] == Verdict.CLAIM
            and (claim_type_id is None or row["claim_type_id"] == claim_type_id)
        )

    def recall(claim_type_id: int | None) -> dict:
        estimate = stats.recall_estimate(
            flagged=stats.Stratum(messages["flagged"], reviewed["flagged"], claims("flagged", claim_type_id)),
            rule_only=stats.Stratum(
                messages["rule_only"], reviewed["rule_only"], claims("rule_only", claim_type_id)
            ),
            qa=stats.Stratum(
                messages["below_threshold"],
                reviewed["below_threshold"],
                claims("below_threshold", claim_type_id),
            ),
            unread=stats.Stratum(
                messages["unread_part"], reviewed["unread_part"], claims("unread_part", claim_type_id)
            ),
        )
        return asdict(estimate)

    result["strata"] = {
        stratum: {"messages": messages[stratum], "reviewed": reviewed[stratum], "claims": claims(stratum)}
        for stratum in STRATA
    }
    result["overall"] = {
        "precision": stats.rate(claims("flagged"), reviewed["flagged"]).as_dict(),
        "recall": recall(None),
    }
    for ct in claim_types():
        flagged_rows = [r for r in table if r["model_flagged"] and r["model_claim_type_id"] == ct.pk]
        n_flagged = sum(r["n"] for r in flagged_rows)
        said_claim = sum(r["n"] for r in flagged_rows if r["verdict"] == Verdict.CLAIM)
        same_type = sum(r["n"] for r in flagged_rows if r["claim_type_id"] == ct.pk)
        result["per_claim_type"].append(
            {
                "claim_type": ct.code,
                "name": ct.name,
                "flagged_messages": flagged_by_type.get(ct.pk, 0),
                "reviewed_flagged": n_flagged,
                "precision": stats.rate(said_claim, n_flagged).as_dict(),
                "type_precision": stats.rate(same_type, n_flagged).as_dict(),
                "recall": recall(ct.pk),
            }
        )
    result["offline"] = _offline(version)
    return result


def confusion(*, version: ModelVersion | None) -> dict:
    """Reviewer (rows) against model (columns): the model's label is its predicted claim type when
    it flagged the message and no_claim otherwise; the reviewer's is the claim type or no_claim."""
    types = claim_types()
    labels = [NO_CLAIM] + [ct.code for ct in types]
    names = ["Not a claim"] + [ct.name for ct in types]
    matrix = [[0] * len(labels) for _ in labels]
    result = {"model_version": version_dict(version), "labels": labels, "names": names, "matrix": matrix}
    if version is None:
        return result
    index = {ct.pk: i + 1 for i, ct in enumerate(types)}
    for row in _decision_table(version):
        reviewer = index.get(row["claim_type_id"], 0) if row["verdict"] == Verdict.CLAIM else 0
        model = index.get(row["model_claim_type_id"], 0) if row["model_flagged"] else 0
        matrix[reviewer][model] += row["n"]
    result["total"] = sum(map(sum, matrix))
    result["agreement"] = sum(matrix[i][i] for i in range(len(labels)))
    return result
