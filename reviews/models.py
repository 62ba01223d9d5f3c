"""Review data: locks on queue items and the append-only, hash-chained decision record."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
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


class DecisionTiming(models.Model):
    """How long a reviewer held a message before deciding it: from the claim (the lock) to the
    decision. Written by the decision service with a first-level decision taken live (a replayed
    decision has no real claim time); the Reviewers page reads its median. Kept beside the
    decision, not in it: it is a measurement of the work, not part of the evidence judged."""

    # No database constraint towards decisions, here and in DoubleReview: decisions are never
    # deleted (append-only, trigger), and a record removed by tampering must show up as a gap in
    # the audit chain's check, not be blocked or hidden by the rows that point at it.
    decision = models.OneToOneField(
        ReviewDecision,
        on_delete=models.DO_NOTHING,
        primary_key=True,
        related_name="timing",
        db_constraint=False,
    )
    claimed_at = models.DateTimeField()
    seconds = models.FloatField()

    def __str__(self) -> str:
        return f"decision {self.decision_id}: {self.seconds:.0f} s"


class DoubleReviewRule(models.Model):
    """A double-review rate for one claim type, replacing DOUBLE_REVIEW_RATE for decisions of
    that type (1.0: every such decision is reviewed twice; 0.0: none is). Data, edited by
    compliance admins in the admin; read when a decision is recorded."""

    claim_type = models.OneToOneField(ClaimType, on_delete=models.PROTECT, related_name="double_review_rule")
    rate = models.FloatField(
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of decided messages of this claim type that get a blind second review (0 to 1).",
    )
    note = models.CharField(max_length=300, blank=True, help_text="Why this rate.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["claim_type__position"]
        constraints = [
            models.CheckConstraint(
                condition=Q(rate__gte=0.0) & Q(rate__lte=1.0), name="double_review_rate_0_to_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.claim_type}: {self.rate:.0%}"


class DoubleReviewOutcome(models.TextChoices):
    PENDING = "pending", "Waiting for a second reviewer"
    AGREED = "agreed", "The two reviewers agree"
    DISAGREED = "disagreed", "The two reviewers disagree (escalated)"
    ESCALATED = "escalated", "The second reviewer escalated"


class DoubleReviewReason(models.TextChoices):
    RATE = "rate", "DOUBLE_REVIEW_RATE sample"
    CLAIM_TYPE_RULE = "claim_type_rule", "Claim-type rule"


class DoubleReview(models.Model):
    """A decided message drawn for a blind second review (reviews.double_review), and what came
    of it. Both decisions, and the compliance admin's final one after a disagreement, are
    ordinary records of the hash chain; this row links them. The second reviewer is someone
    other than the first and sees neither the first decision nor who made it."""

    message = models.OneToOneField(Message, on_delete=models.PROTECT, related_name="double_review")
    first_decision = models.OneToOneField(
        ReviewDecision,
        on_delete=models.DO_NOTHING,
        related_name="double_review_as_first",
        db_constraint=False,
    )
    second_decision = models.OneToOneField(
        ReviewDecision,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        related_name="double_review_as_second",
        db_constraint=False,
    )
    final_decision = models.OneToOneField(
        ReviewDecision,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        related_name="double_review_as_final",
        db_constraint=False,
        help_text="The compliance admin's decision on the escalation; it is final.",
    )
    claim_type = models.ForeignKey(
        ClaimType,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The claim type the sample was drawn for (the first decision's, or the model's).",
    )
    reason = models.CharField(max_length=16, choices=DoubleReviewReason.choices)
    rate = models.FloatField(help_text="The sampling rate that applied.")
    outcome = models.CharField(
        max_length=16, choices=DoubleReviewOutcome.choices, default=DoubleReviewOutcome.PENDING
    )
    sampled_at = models.DateTimeField()
    second_at = models.DateTimeField(null=True, blank=True)
    final_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-sampled_at"]
        indexes = [
            models.Index(fields=["outcome", "sampled_at"], name="double_review_outcome"),
            models.Index(fields=["second_at"], name="double_review_second_at"),
        ]

    def __str__(self) -> str:
        return f"double review of {self.message_id}: {self.outcome}"
