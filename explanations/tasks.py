"""Celery tasks of the explanation step (explain_batch: gpu queue; canary_check: checks queue;
sweep: default queue, from celery beat): thin wrappers around one service."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
    soft_time_limit=settings.EXPLAIN_SOFT_TIME_LIMIT_SECONDS,
    time_limit=settings.EXPLAIN_TIME_LIMIT_SECONDS,
)
def explain_batch(self, message_ids: list[int]) -> dict[str, int]:
    """Explain flagged messages and move them to review (see explanations.services); a batch
    that crashes or times out is split until the message that does it is alone."""
    from explanations.services import messages_explain_batch
    from scoring.errors import DeviceFailed
    from scoring.services.claims import Claimant
    from scoring.worker import device_failed, require_usable_device

    require_usable_device(self)
    try:
        return messages_explain_batch(message_ids=message_ids, claimant=Claimant.of_task(self))
    except DeviceFailed as exc:
        device_failed(self, exc)  # raises Reject: back to the queue for a worker whose device works


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)
def canary_check(self, activation_id: int) -> dict[str, object]:
    """Re-check the explanation canaries after a model activation (idempotent per activation)."""
    from explanations.services import canary_check_for_activation
    from scoring.worker import require_usable_device

    require_usable_device(self)
    check = canary_check_for_activation(activation_id=activation_id)
    return {"canary_check": check.pk, "error": check.error, "findings": len(check.findings)}


@shared_task(acks_late=True, ignore_result=True)
def sweep() -> dict[str, int]:
    """Periodic (celery beat): publish explanation again for flagged messages whose task may be
    lost (explanations.services.queueing.explanations_sweep)."""
    from explanations.services.queueing import explanations_sweep

    result = vars(explanations_sweep())
    if any(result.values()):
        logger.info("explanations sweep: %s", result)
    return result
