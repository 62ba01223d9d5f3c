"""Model comparisons: requested by an admin, computed by a task (it loads both models)."""

from __future__ import annotations

import logging
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.publish import publish
from governance.comparison import compare_versions
from scoring.errors import ModelVersionError
from scoring.models import ModelComparison, ModelVersion

logger = logging.getLogger(__name__)


def model_comparison_request(
    *, baseline: ModelVersion, candidate: ModelVersion, user=None
) -> ModelComparison:
    """Record a pending comparison and queue its computation after commit (the checks queue: it
    scores with both models for minutes on a CPU). Comparing a version with itself is refused."""
    if baseline.pk == candidate.pk:
        raise ModelVersionError("Choose two different model versions to compare.")
    with transaction.atomic():
        comparison = ModelComparison.objects.create(
            baseline=baseline,
            candidate=candidate,
            requested_by=user if user and user.is_authenticated else None,
        )

        def publish_comparison() -> None:
            from governance.tasks import compare_models

            publish(
                compare_models,
                args=[comparison.pk],
                queue=settings.CHECKS_QUEUE,
                what=f"comparison {comparison.pk} stays pending",
            )

        transaction.on_commit(publish_comparison)
    return comparison


def model_comparison_run(
    *, comparison_id: int, since: datetime | None = None, drift_n: int = 200
) -> ModelComparison:
    """Compute a pending (or re-delivered running) comparison and store its results, the canary
    faithfulness check of both versions among them; a failure is stored with its reason. A
    finished comparison is left as it is."""
    from explanations.services import canary_comparison
    from scoring.corpus.generator import read_jsonl

    claimed = ModelComparison.objects.filter(
        pk=comparison_id, status__in=[ModelComparison.Status.PENDING, ModelComparison.Status.RUNNING]
    ).update(status=ModelComparison.Status.RUNNING)
    comparison = ModelComparison.objects.select_related("baseline", "candidate").get(pk=comparison_id)
    if not claimed:
        return comparison
    try:
        results = compare_versions(
            baseline=comparison.baseline,
            candidate=comparison.candidate,
            corpus_rows=read_jsonl(settings.CORPUS_PATH),
            since=since,
            drift_n=drift_n,
        )
        results["canary"] = canary_comparison(baseline=comparison.baseline, candidate=comparison.candidate)
    except Exception as exc:
        logger.exception("comparison %s failed", comparison_id)
        comparison.status, comparison.error = ModelComparison.Status.FAILED, f"{type(exc).__name__}: {exc}"
    else:
        comparison.status, comparison.results = ModelComparison.Status.DONE, results
    comparison.finished_at = timezone.now()
    comparison.save(update_fields=["status", "error", "results", "finished_at"])
    return comparison
