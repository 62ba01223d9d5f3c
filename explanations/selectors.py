"""Reads of the explanations app."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from explanations.models import CanaryCheck, FaithfulnessReport
from scoring.models import ModelVersion


def versions_with_reports() -> QuerySet[ModelVersion]:
    """Model versions that have a faithfulness report or a canary check, newest first."""
    return ModelVersion.objects.filter(
        Q(pk__in=FaithfulnessReport.objects.values("model_version_id"))
        | Q(pk__in=CanaryCheck.objects.values("model_version_id"))
    ).order_by("-created_at", "-id")


def latest_report(version: ModelVersion) -> FaithfulnessReport | None:
    """The newest faithfulness report of a version."""
    return FaithfulnessReport.objects.filter(model_version=version).order_by("-created_at", "-id").first()


def latest_canary_check(version: ModelVersion) -> CanaryCheck | None:
    """The newest canary check of a version (with its previous version)."""
    return (
        CanaryCheck.objects.filter(model_version=version)
        .select_related("previous_version")
        .order_by("-created_at", "-id")
        .first()
    )
