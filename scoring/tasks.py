"""Celery tasks of the scoring pipeline: thin wrappers that take ids and call one service."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_process_init
from django.conf import settings
from django.db import InterfaceError, OperationalError

from scoring.errors import ModelNotReady

logger = logging.getLogger(__name__)

# Transient: the database blinked, or no model is active yet (an admin may activate one).
TRANSIENT = (OperationalError, InterfaceError, ModelNotReady)


@worker_process_init.connect
def _limit_torch_threads(**_: object) -> None:
    """Runs in each forked worker child; nothing model-related is loaded before the fork."""
    if settings.CELERY_WORKER_TORCH_THREADS:
        import torch

        torch.set_num_threads(settings.CELERY_WORKER_TORCH_THREADS)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
)
def score_batch(self, message_ids: list[int]) -> dict[str, int]:
    """Score up to SCORING_BATCH_SIZE messages (gpu queue). Idempotent: see the service."""
    from scoring.services.pipeline import messages_score_batch

    outcome = messages_score_batch(message_ids=message_ids)
    return {"scored": outcome.scored, "failed": outcome.failed, "skipped": outcome.skipped}


@shared_task(acks_late=True, ignore_result=True)
def sweep() -> dict[str, int]:
    """Periodic (celery beat): re-enqueue work stuck too long, so nothing is ever lost."""
    from scoring.services.pipeline import messages_sweep

    result = messages_sweep()
    if any(vars(result).values()):
        logger.info("sweep: %s", result)
    return vars(result)
