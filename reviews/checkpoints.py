"""Writes of the audit checkpoints (beside reviews.services, which holds the queue and decision
writes): sign the head of the decision chain and append it to the checkpoint log kept outside
the database (reviews.audit says why, reviews.checkpoint_store where)."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from reviews.audit import Checkpoint, checkpoint_authentic, checkpoint_parse, checkpoint_sign
from reviews.checkpoint_store import CheckpointStore, checkpoint_keys, checkpoint_store
from reviews.errors import AuditChainBroken
from reviews.hashing import GENESIS_HASH, HASHED_FIELDS, chain_verify
from reviews.models import ReviewDecision
from reviews.services import _chain_lock as chain_lock  # the lock decisions append under

audit_log = logging.getLogger("claimwatch.audit")


CHECKPOINT_TAIL_LINES = 50


def _latest_authentic_checkpoint(store: CheckpointStore, keys: list[bytes]) -> Checkpoint | None:
    """The newest checkpoint of the log that a key verifies (a forged line appended after it is
    passed over; the audit reports it)."""
    for number, text in enumerate(reversed(store.tail(CHECKPOINT_TAIL_LINES))):
        try:
            checkpoint = checkpoint_parse(text, line=-(number + 1))
        except ValueError:
            continue
        if checkpoint_authentic(checkpoint, keys):
            return checkpoint
    return None


def audit_checkpoint_write(*, now: datetime | None = None) -> Checkpoint | None:
    """Sign the chain's head and append it to the checkpoint log (reviews.checkpoint_store).

    Promises: nothing is written when the chain is empty or its head is already the latest
    checkpoint's (running twice writes once). A checkpoint is signed only over a chain that
    still agrees with the latest one: the latest checkpoint's record is stored with the hash it
    signed and every record after it links and hashes correctly; otherwise AuditChainBroken is
    raised and nothing is written, so records removed or rewritten since stay a finding instead of
    being signed over. Appends are serialised with decisions by the chain lock."""
    keys = checkpoint_keys()
    store = checkpoint_store()
    with transaction.atomic():
        chain_lock()
        head = ReviewDecision.objects.order_by("-sequence").values("sequence", "content_hash").first()
        if head is None:
            return None
        latest = _latest_authentic_checkpoint(store, keys)
        if latest is not None and (latest.sequence, latest.head_hash) == (
            head["sequence"],
            head["content_hash"],
        ):
            return None
        start, previous = 1, GENESIS_HASH
        if latest is not None:
            if head["sequence"] < latest.sequence:
                raise AuditChainBroken(
                    f"The chain ends at record #{head['sequence']}, before record #{latest.sequence} of the "
                    "latest checkpoint: records were removed. No checkpoint was written."
                )
            anchored = ReviewDecision.objects.filter(sequence=latest.sequence).values("content_hash").first()
            if anchored is None or anchored["content_hash"] != latest.head_hash:
                raise AuditChainBroken(
                    f"Record #{latest.sequence} is not stored with the hash the latest checkpoint signed: "
                    "the chain was rewritten. No checkpoint was written."
                )
            start, previous = latest.sequence + 1, latest.head_hash
        segment = (
            ReviewDecision.objects.filter(sequence__gte=start)
            .order_by("sequence")
            .values("id", "content_hash", *HASHED_FIELDS)
            .iterator(chunk_size=2_000)
        )
        report = chain_verify(segment, first_sequence=start, previous_hash=previous)
        if not report.intact:
            raise AuditChainBroken(
                f"The chain since the latest checkpoint is {report.summary()}. No checkpoint was written."
            )
        line = checkpoint_sign(
            key=keys[0],
            sequence=head["sequence"],
            head_hash=head["content_hash"],
            count=ReviewDecision.objects.count(),
            written_at=now or timezone.now(),
            previous_mac=latest.mac if latest is not None else "",
        )
        store.append(line)
    audit_log.info("audit checkpoint %s", line)
    return checkpoint_parse(line)
