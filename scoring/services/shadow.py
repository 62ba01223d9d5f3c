"""Shadow scoring: a challenger version scores the same traffic as the active one, routes nothing.

A version in shadow gets a Prediction (is_shadow=True, flagged against its own threshold) for
every message ingested after `shadow_since`. Shadow tasks are published only after the active
model's routing has committed, so they can never delay review; the sweeper fills in what a
broker outage left out. Comparisons read these rows (governance.comparison); a version is put in shadow by
governance.services.shadow."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from core.publish import publish
from scoring.classifier import scorer_for
from scoring.constants import MessageStatus
from scoring.models import ClaimType, Message, ModelVersion, Prediction
from scoring.services.batches import chunks, prediction_from_result

logger = logging.getLogger(__name__)


def shadow_versions() -> list[ModelVersion]:
    return list(ModelVersion.objects.filter(is_shadow=True, is_active=False))


def messages_enqueue_shadow(
    *, message_ids: Sequence[int], versions: Sequence[ModelVersion] | None = None
) -> int:
    """Publish shadow-scoring tasks for the shadow versions (default: all; none: nothing)."""
    from scoring.tasks import shadow_score_batch

    published = 0
    for version in shadow_versions() if versions is None else versions:
        for chunk in chunks(list(message_ids), settings.SCORING_BATCH_SIZE):
            if not publish(
                shadow_score_batch,
                args=[chunk, version.pk],
                queue=settings.SCORING_QUEUE,
                what=f"shadow scoring of {len(chunk)} messages deferred",
            ):
                return published
            published += len(chunk)
    return published


def messages_shadow_score(*, message_ids: Sequence[int], version_id: int, scorer_factory=scorer_for) -> int:
    """Score the messages with the shadow version and store shadow predictions. Idempotent
    (unique per message and version); a version no longer in shadow scores nothing. Messages
    the challenger refuses are skipped (they are the active model's to fail). Returns the
    number of predictions written."""
    version = ModelVersion.objects.filter(pk=version_id, is_shadow=True, is_active=False).first()
    if version is None:
        return 0
    have = set(
        Prediction.objects.filter(model_version=version, message_id__in=list(message_ids)).values_list(
            "message_id", flat=True
        )
    )
    messages = list(
        Message.objects.filter(id__in=[i for i in message_ids if i not in have]).only("id", "body")
    )
    if not messages:
        return 0
    scorer = scorer_factory(version)
    ok = [m for m in messages if scorer.refusal_reason(m.body) is None]
    if not ok:
        return 0
    started = time.perf_counter()
    results = scorer.score([m.body for m in ok])
    per_message_ms = (time.perf_counter() - started) * 1000.0 / len(ok)
    claim_types = {ct.code: ct for ct in ClaimType.objects.all()}
    rows = [
        prediction_from_result(message, version, result, per_message_ms, claim_types, shadow=True)
        for message, result in zip(ok, results, strict=True)
    ]
    created = Prediction.objects.bulk_create(rows, ignore_conflicts=True)
    return len(created)


def shadow_sweep(*, now=None, limit: int = 5_000) -> int:
    """Publish shadow scoring for scored messages since `shadow_since` that still lack the
    shadow version's prediction (a publish that failed during a broker outage)."""
    now = now or timezone.now()
    settled = now - timedelta(seconds=settings.STUCK_AFTER_SECONDS)
    published = 0
    for version in shadow_versions():
        missing = list(
            Message.objects.filter(created_at__gte=version.shadow_since, created_at__lt=settled)
            .exclude(status__in=[MessageStatus.RECEIVED, MessageStatus.QUEUED, MessageStatus.FAILED])
            .exclude(predictions__model_version=version)
            .order_by("id")
            .values_list("id", flat=True)[:limit]
        )
        if missing:
            published += messages_enqueue_shadow(message_ids=missing, versions=[version])
    return published
