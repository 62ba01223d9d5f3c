"""Celery tasks of the model lifecycle. The comparison task keeps the name it was registered under
in scoring (`scoring.tasks.compare_models`): messages already queued find it, and the route to the
checks queue (compliance_site.celery) names it."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="scoring.tasks.compare_models", bind=True, acks_late=True, reject_on_worker_lost=True)
def compare_models(self, comparison_id: int) -> str:
    """Compute a requested model comparison (checks queue: it scores with both versions)."""
    from governance.services.comparisons import model_comparison_run
    from scoring.worker import require_usable_device

    require_usable_device(self)
    return model_comparison_run(comparison_id=comparison_id).status
