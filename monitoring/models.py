"""Monitoring data: the training-corpus length reference, and the daily roll-ups of scored
messages and of review decisions that keep the charts fast at millions of rows.

Both roll-ups are derived data, maintained by monitoring.services.rollup_refresh and never
edited by hand: messages are recomputed per changed day; decisions, which are append-only and
numbered in commit order, are folded in incrementally (a correction moves its message's count
from the superseded decision's day to its own)."""

from __future__ import annotations

from django.db import models

from scoring.models import ClaimType, ModelVersion


class LengthReference(models.Model):
    """The length distribution (characters per message) of a training corpus's train split,
    computed once per corpus file (by sha256): its 99th percentile, decile bin edges and the
    share of the corpus in each bin. `available` is False, with the reason, when no corpus file
    with that sha256 could be found; the length charts then say so."""

    corpus_sha256 = models.CharField(max_length=64, unique=True)
    corpus_path = models.CharField(max_length=500, blank=True)
    available = models.BooleanField(default=True)
    reason = models.CharField(max_length=500, blank=True)
    rows = models.PositiveIntegerField(default=0)
    p99_chars = models.FloatField(null=True, blank=True)
    edges = models.JSONField(default=list, help_text="Inner bin edges in characters, ascending.")
    proportions = models.JSONField(default=list, help_text="Share of the corpus per bin.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"length reference of corpus {self.corpus_sha256[:12]}"


class MessageDayRollup(models.Model):
    """Scored messages of one UTC day (by `received_at`) for one routing model version, one
    route and (for flagged routes) one predicted claim type: counts, the length histogram over
    the version's LengthReference bins, the score histogram over monitoring.stats.SCORE_EDGES,
    rule hits per rule claim type, and explanation outcomes per method.

    Derived data: monitoring.services.rollup_refresh recomputes a whole day whenever any message
    received that day changed (Message.updated_at), so it is never edited in place."""

    day = models.DateField()
    model_version = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="+")
    route_reason = models.CharField(max_length=16)
    predicted_claim_type = models.ForeignKey(
        ClaimType,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="The model's claim type, for flagged routes only (null otherwise).",
    )
    length_reference = models.ForeignKey(
        LengthReference, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    messages = models.PositiveIntegerField()
    longer_than_p99 = models.PositiveIntegerField(default=0)
    length_histogram = models.JSONField(default=list)
    score_histogram = models.JSONField(default=list)
    rule_hits = models.JSONField(default=dict, help_text="{rule claim type code: messages}.")
    explanations = models.JSONField(
        default=dict, help_text="{method: {computed, passed, failed}} over the messages' explanations."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["day", "model_version", "route_reason", "predicted_claim_type"],
                name="one_rollup_row_per_group",
            )
        ]
        indexes = [models.Index(fields=["model_version", "day"], name="rollup_version_day")]

    def __str__(self) -> str:
        return f"{self.day} v{self.model_version_id} {self.route_reason}: {self.messages}"


class DecisionDayRollup(models.Model):
    """Counted review decisions (monitoring.selectors.decisions.effective_decisions) of one UTC
    day, by when the decision was recorded, grouped by everything the disagreement, precision,
    recall and confusion figures need: the model version and its flag and claim type, the QA
    sample flag, whether the message went to review for a part not read (its route reason), the
    verdict and the reviewer's claim type."""

    day = models.DateField()
    model_version = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="+")
    model_flagged = models.BooleanField()
    is_qa_sample = models.BooleanField()
    unread_part = models.BooleanField(default=False)
    verdict = models.CharField(max_length=16)
    claim_type = models.ForeignKey(
        ClaimType, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    model_claim_type = models.ForeignKey(
        ClaimType, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    decisions = models.IntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["model_version", "day"], name="decision_rollup_version_day")]

    def __str__(self) -> str:
        return f"{self.day} v{self.model_version_id} {self.verdict}: {self.decisions}"


class RollupState(models.Model):
    """The one row that serialises roll-up refreshes and remembers how far they got: every
    message changed at or after `watermark` may not be in the message roll-up yet; decisions up
    to `decision_sequence` are in the decision roll-up."""

    watermark = models.DateTimeField(null=True, blank=True)
    decision_sequence = models.PositiveBigIntegerField(default=0)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    days_recomputed = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"roll-up state (watermark {self.watermark})"
