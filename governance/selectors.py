"""Reads of the Models pages: versions, activations, comparisons."""

from __future__ import annotations

from django.db.models import QuerySet

from scoring.models import ModelActivation, ModelComparison, ModelVersion


def model_versions() -> QuerySet[ModelVersion]:
    return ModelVersion.objects.all()


def model_versions_listed() -> QuerySet[ModelVersion]:
    """Every version, newest first, with its parent (a threshold variant's)."""
    return ModelVersion.objects.select_related("parent").order_by("-created_at", "-id")


def model_version_for_page() -> QuerySet[ModelVersion]:
    return ModelVersion.objects.select_related("parent")


def recent_activations(limit: int = 50) -> QuerySet[ModelActivation]:
    return ModelActivation.objects.select_related("model_version", "previous", "activated_by")[:limit]


def recent_comparisons(limit: int = 20) -> QuerySet[ModelComparison]:
    return ModelComparison.objects.select_related("baseline", "candidate", "requested_by")[:limit]


def comparisons_with_versions() -> QuerySet[ModelComparison]:
    return ModelComparison.objects.select_related("baseline", "candidate")
