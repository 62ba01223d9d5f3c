"""Celery tasks of the scoring pipeline: thin wrappers that take ids and call one service."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import celeryd_after_setup, worker_process_init
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

from scoring.errors import DeviceFailed, ModelNotReady

logger = logging.getLogger(__name__)

# Transient: the database blinked, or no model is active yet (an admin may activate one).
TRANSIENT = (OperationalError, InterfaceError, ModelNotReady)


@celeryd_after_setup.connect
def _check_device_before_consuming(sender: str, instance, **_: object) -> None:
    """In the worker's parent, before it consumes: a worker that cannot use its device does not
    take model work (scoring.worker)."""
    from scoring.worker import check_before_consuming

    check_before_consuming(node=sender, queues=instance.app.amqp.queues)


@worker_process_init.connect
def _start_child(**_: object) -> None:
    """Runs in each forked worker child; nothing model-related is loaded before the fork."""
    from scoring.worker import on_child_start

    on_child_start()


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=5,
    soft_time_limit=settings.SCORING_SOFT_TIME_LIMIT_SECONDS,
    time_limit=settings.SCORING_TIME_LIMIT_SECONDS,
)
def score_batch(self, message_ids: list[int]) -> dict[str, int]:
    """Score up to SCORING_BATCH_SIZE messages (gpu queue). Idempotent, and a batch that crashes
    or times out is split until the message that does it is alone: see the service.

    The one hand-off to the next stage: what the batch routed to explanation goes to the
    explanation queue (explanations.services.queueing.messages_enqueue_explanation) after the
    batch's writes have committed."""
    from explanations.services.queueing import messages_enqueue_explanation
    from scoring.services.claims import Claimant
    from scoring.services.pipeline import messages_score_batch
    from scoring.worker import device_failed, require_usable_device

    require_usable_device(self)
    try:
        outcome = messages_score_batch(message_ids=message_ids, claimant=Claimant.of_task(self))
    except DeviceFailed as exc:
        device_failed(self, exc)  # raises Reject: back to the queue for a worker whose device works
    if outcome.to_explain:
        to_explain = list(outcome.to_explain)
        transaction.on_commit(lambda: messages_enqueue_explanation(message_ids=to_explain))
    return {
        "scored": outcome.scored,
        "failed": outcome.failed,
        "skipped": outcome.skipped,
        "deferred": outcome.deferred,
    }


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    max_retries=5,
)
def shadow_score_batch(self, message_ids: list[int], version_id: int) -> int:
    """Score messages with a challenger version in shadow (gpu queue); routes nothing."""
    from scoring.services.shadow import messages_shadow_score
    from scoring.worker import require_usable_device

    require_usable_device(self)
    return messages_shadow_score(message_ids=message_ids, version_id=version_id)


@shared_task(ignore_result=True)
def gather() -> int:
    """Queue the messages waiting in `received` in batches of up to SCORING_BATCH_SIZE (requested
    by single messages, GATHER_DELAY_SECONDS after the first of them). A lost gather is
    harmless: the sweeper (beat) gathers the same messages."""
    from scoring.services.queueing import messages_gather

    return messages_gather()


@shared_task(acks_late=True, ignore_result=True)
def sweep() -> dict[str, int]:
    """Periodic (celery beat): recover the batches of dead worker processes and re-enqueue
    scoring (and shadow scoring) stuck too long, so nothing is ever lost; explanations have a
    sweeper of their own (explanations.tasks.sweep)."""
    from scoring.services.queueing import messages_sweep
    from scoring.services.shadow import shadow_sweep

    result = {**vars(messages_sweep()), "shadow_requeued": shadow_sweep()}
    if any(result.values()):
        logger.info("sweep: %s", result)
    return result
