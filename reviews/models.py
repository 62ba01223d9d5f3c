"""Review data: locks on queue items and the append-only, hash-chained decision record."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from scoring.models import ClaimType, Message, ModelVersion


class Verdict(models.TextChoices):
    CLAIM = "claim", "Claim"
    NO_CLAIM = "no_claim", "Not a claim"
    ESCALATE = "escalate", "Escalate"


class ReviewLock(models.Model):
    """A time-limited claim of one queued message by one reviewer, so that two reviewers
    never work on the same message. An expired lock frees the message; a decision deletes it."""

    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="review_lock")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    locked_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["reviewer", "expires_at"], name="lock_reviewer_expiry")]

    def __str__(self) -> str:
        return f"{self.message_id} locked by {self.reviewer_id} until {self.expires_at:%H:%M}"

    @property
    def is_live(self) -> bool:
        return self.expires_at > timezone.now()


class ReviewDecisionQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise PermissionError("Review decisions are append-only: they cannot be updated.")

    def delete(self):
        raise PermissionError("Review decisions are append-only: they cannot be deleted.")


class ReviewDecision(models.Model):
    """A reviewer's decision on a message, next to a snapshot of the prediction it judged.

    Append-only: no update, no delete (guarded here, in the queryset, in the admin, and by a
    database trigger on PostgreSQL). A correction is a new decision with `supersedes` and a
    reason. Each row stores `content_hash` = sha256 of its canonical content plus
    `previous_hash`, so `verify_audit_chain` can name the first tampered record."""

    sequence = models.PositiveBigIntegerField(unique=True, help_text="Position in the audit chain.")
    message = models.ForeignKey(Message, on_delete=models.PROTECT, related_name="decisions")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="decisions")
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    claim_type = models.ForeignKey(
        ClaimType, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    note = models.TextField(blank=True)
    escalation_reason = models.TextField(blank=True)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    supersede_reason = models.TextField(blank=True)
    is_second_level = models.BooleanField(
        default=False, help_text="Decided by a compliance admin on an escalation."
    )
    # Snapshot of the evidence judged (also denormalised below for fast filtering).
    snapshot = models.JSONField()
    model_version = models.ForeignKey(
        ModelVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    model_score = models.FloatField(null=True, blank=True)
    model_threshold = models.FloatField(null=True, blank=True)
    model_flagged = models.BooleanField(null=True)
    model_claim_type = models.ForeignKey(
        ClaimType, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    is_qa_sample = models.BooleanField(default=False)
    agrees_with_model = models.BooleanField(null=True, help_text="Flag vs verdict; null for escalations.")
    claim_type_matches = models.BooleanField(null=True, help_text="Both say claim: same claim type?")
    created_at = models.DateTimeField()
    content_hash = models.CharField(max_length=64, unique=True)
    previous_hash = models.CharField(max_length=64)

    objects = ReviewDecisionQuerySet.as_manager()

    class Meta:
        ordering = ["-sequence"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(verdict="claim") | Q(claim_type__isnull=False),
                name="claim_verdict_has_claim_type",
            ),
        ]
        indexes = [
            models.Index(fields=["created_at"], name="decision_created"),
            models.Index(fields=["reviewer", "created_at"], name="decision_reviewer_created"),
            models.Index(fields=["model_version", "created_at"], name="decision_version_created"),
            models.Index(fields=["message", "-sequence"], name="decision_message_seq"),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.verdict} on {self.message_id}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not self._state.adding:
            raise PermissionError("Review decisions are append-only: they cannot be updated.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("Review decisions are append-only: they cannot be deleted.")

    @property
    def names_then(self) -> dict | None:
        """The reviewer's username and the claim type's code and name at the moment of the
        decision, from the snapshot ({"reviewer", "claim_type"}); None for records written
        before snapshots kept them (a page then says it shows today's names)."""
        return self.snapshot.get("decision")
