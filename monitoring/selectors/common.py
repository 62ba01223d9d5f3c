"""Shared reads of the monitoring selectors: which model version, its activations, claim types."""

from __future__ import annotations

from datetime import date, datetime

from django.db.models import Exists, OuterRef

from monitoring.errors import MetricsInputError
from monitoring.timeline import period_end
from scoring.models import ClaimType, ModelActivation, ModelVersion, Prediction


def version_resolve(version_id: int | None) -> ModelVersion | None:
    """The model version asked for; without one, the active version, else the newest one that
    routed anything. None when there is no version at all. Raises MetricsInputError for an
    unknown id."""
    if version_id is not None:
        version = ModelVersion.objects.filter(pk=version_id).first()
        if version is None:
            raise MetricsInputError(f"There is no model version with id {version_id}.")
        return version
    active = ModelVersion.objects.filter(is_active=True).first()
    if active is not None:
        return active
    routed = Prediction.objects.filter(model_version=OuterRef("pk"), is_shadow=False)
    return ModelVersion.objects.filter(Exists(routed)).order_by("-created_at", "-id").first()


def version_dict(version: ModelVersion | None) -> dict | None:
    if version is None:
        return None
    return {
        "id": version.pk,
        "name": version.name,
        "is_active": version.is_active,
        "threshold": version.threshold,
    }


def activation_times(version_ids: list[int] | None = None) -> dict[int, list[datetime]]:
    """{version id: its activation times, oldest first}."""
    rows = ModelActivation.objects.order_by("activated_at")
    if version_ids is not None:
        rows = rows.filter(model_version_id__in=version_ids)
    times: dict[int, list[datetime]] = {}
    for version_id, activated_at in rows.values_list("model_version_id", "activated_at"):
        times.setdefault(version_id, []).append(activated_at)
    return times


def activation_markers() -> list[dict]:
    """Every activation, oldest first: the markers drawn on every chart."""
    return [
        {
            "model_version": {"id": a.model_version_id, "name": a.model_version.name},
            "previous": {"id": a.previous_id, "name": a.previous.name} if a.previous_id else None,
            "activated_at": a.activated_at.isoformat(),
            "reason": a.reason,
        }
        for a in ModelActivation.objects.select_related("model_version", "previous").order_by("activated_at")
    ]


def claim_types() -> list[ClaimType]:
    return list(ClaimType.objects.order_by("position"))


def period_bounds(start: date, period: str) -> dict:
    return {"start": start.isoformat(), "end": period_end(start, period).isoformat()}
