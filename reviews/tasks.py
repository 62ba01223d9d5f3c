"""Celery tasks of the reviews app: thin wrappers around one service each."""

from __future__ import annotations

import logging

from celery import shared_task

from reviews.checkpoints import audit_checkpoint_write
from reviews.errors import AuditChainBroken

logger = logging.getLogger("claimwatch.audit")


@shared_task(name="reviews.tasks.audit_checkpoint", ignore_result=True)
def audit_checkpoint() -> None:
    """Beat, every AUDIT_CHECKPOINT_INTERVAL_SECONDS: sign the chain's head into the checkpoint log.
    Idempotent (an unchanged head writes nothing). A chain that no longer agrees with its latest
    checkpoint is not signed over: logged as an error, and the audit page reports it."""
    try:
        audit_checkpoint_write()
    except AuditChainBroken as exc:
        logger.error("audit checkpoint refused: %s", exc)
