"""Explanations: attributions with their faithfulness check, attention diagnostics, reports."""

from __future__ import annotations

from django.db import models

from explanations.faithfulness import IG_DELTA_TOLERANCE, converged
from scoring.constants import REVIEWED_STATUSES
from scoring.models import Message, ModelActivation, ModelVersion, Prediction


class ExplanationMethod(models.TextChoices):
    INTEGRATED_GRADIENTS = "integrated_gradients", "Integrated Gradients"
    OCCLUSION = "occlusion", "Occlusion (word deletion)"


class ExplanationStatus(models.TextChoices):
    OK = "ok", "Computed"
    FAILED = "failed", "Failed"


EXPLANATION_IMMUTABLE = (
    "The explanation of a reviewed message is evidence of its decision: it cannot be changed or deleted."
)


class ExplanationQuerySet(models.QuerySet):
    def _of_reviewed_messages(self) -> bool:
        return self.filter(message__status__in=REVIEWED_STATUSES).exists()

    def update(self, **kwargs):
        if self._of_reviewed_messages():
            raise PermissionError(EXPLANATION_IMMUTABLE)
        return super().update(**kwargs)

    def delete(self):
        if self._of_reviewed_messages():
            raise PermissionError(EXPLANATION_IMMUTABLE)
        return super().delete()


class Explanation(models.Model):
    """A word-level attribution of one prediction and the faithfulness check it was put to.

    `words` is [{"word", "start", "end", "score"}] with character offsets into the message
    body; `top_words` the k words the check removed. `passed` comes from the one rule in
    explanations.faithfulness; `verdict_text` says it in plain words with the numbers. A
    failed computation is stored too (status=failed, reason), so nothing waits forever.

    Once its message is reviewed (scoring.constants.REVIEWED_STATUSES) an explanation is what the
    reviewer saw: no update, no delete (here, in the queryset, and by a database trigger, reviews
    migration 0004)."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="explanations")
    prediction = models.ForeignKey(Prediction, on_delete=models.CASCADE, related_name="explanations")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="+")
    method = models.CharField(max_length=32, choices=ExplanationMethod.choices)
    status = models.CharField(max_length=8, choices=ExplanationStatus.choices, default=ExplanationStatus.OK)
    failure_reason = models.TextField(blank=True)
    window_start = models.PositiveIntegerField(default=0, help_text="Char offset of the explained window.")
    window_end = models.PositiveIntegerField(default=0)
    words = models.JSONField(default=list)
    top_words = models.JSONField(default=list)
    k = models.PositiveSmallIntegerField(default=0)
    score_full = models.FloatField(null=True, blank=True)
    score_without_top = models.FloatField(null=True, blank=True)
    score_top_only = models.FloatField(null=True, blank=True)
    comprehensiveness = models.FloatField(null=True, blank=True)
    sufficiency = models.FloatField(null=True, blank=True)
    random_baseline = models.FloatField(null=True, blank=True)
    aopc = models.FloatField(null=True, blank=True)
    aopc_curve = models.JSONField(
        default=list, blank=True, help_text="[{fraction, k, score_without, comprehensiveness}]"
    )
    flipped = models.BooleanField(null=True)
    threshold = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True)
    pass_rule = models.CharField(max_length=300, blank=True)
    verdict_text = models.TextField(blank=True)
    rule_agreement = models.BooleanField(null=True, help_text="Matched rule phrase among the top-k words.")
    n_steps = models.PositiveSmallIntegerField(null=True, blank=True)
    convergence_delta = models.FloatField(null=True, blank=True)
    precision = models.CharField(
        max_length=8, blank=True, help_text="Number format of the IG gradients: float32 or bfloat16."
    )
    compute_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ExplanationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["prediction", "method"], name="one_explanation_per_method")
        ]
        indexes = [models.Index(fields=["model_version", "created_at"], name="explanation_version_time")]

    def __str__(self) -> str:
        return f"{self.method} of {self.prediction_id}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding and self.pk is not None and self._message_reviewed():
            raise PermissionError(EXPLANATION_IMMUTABLE)
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self._message_reviewed():
            raise PermissionError(EXPLANATION_IMMUTABLE)
        return super().delete(*args, **kwargs)

    def _message_reviewed(self) -> bool:
        return Message.objects.filter(pk=self.message_id, status__in=REVIEWED_STATUSES).exists()

    delta_tolerance = IG_DELTA_TOLERANCE

    @property
    def converged(self) -> bool | None:
        """IG only: whether its word scores add up to F(x) - F(baseline) (faithfulness.converged)."""
        return converged(self.convergence_delta)

    @property
    def abs_convergence_delta(self) -> float | None:
        return None if self.convergence_delta is None else abs(self.convergence_delta)


class AttentionDiagnostic(models.Model):
    """The model's own attention weights for one prediction's driving window: a diagnostic of
    where information flowed, never shown as the reason for the decision.

    `weights` holds float16 [layers, heads, tokens, tokens] (numpy .npy bytes, zlib), padding
    excluded; `rollout` is attention rollout (Abnar & Zuidema 2020) [tokens, tokens]."""

    prediction = models.OneToOneField(Prediction, on_delete=models.CASCADE, related_name="attention")
    tokens = models.JSONField()
    layers = models.PositiveSmallIntegerField()
    heads = models.PositiveSmallIntegerField()
    weights = models.BinaryField()
    rollout = models.BinaryField()
    normalisation = models.CharField(
        max_length=200, default="softmax over keys per query row (rows sum to 1), padding masked"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"attention of {self.prediction_id}"


class FaithfulnessReport(models.Model):
    """Offline comparison of explanation methods on flagged test-split messages for one model
    version: flip rate, comprehensiveness, sufficiency, AOPC, token-F1 per method."""

    model_version = models.ForeignKey(
        ModelVersion, on_delete=models.CASCADE, related_name="faithfulness_reports"
    )
    sample_size = models.PositiveIntegerField()
    parameters = models.JSONField(default=dict)
    results = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        get_latest_by = "created_at"

    def __str__(self) -> str:
        return f"faithfulness report {self.pk} of {self.model_version_id}"


class CanaryCheck(models.Model):
    """The fixed canary set re-checked at a model activation: pass rates per method and the
    rank correlation of attributions with the previously active version.

    `details` holds each canary's result per method (attribution, check, verdict); `findings`
    the canaries whose check passed with the previous version and fails now; `parameters` where
    the canary set came from, the threshold, n_steps, the flag rate and the rank correlation per
    method. A check that could not run is recorded with `error`: drift is never hidden."""

    model_version = models.ForeignKey(ModelVersion, on_delete=models.CASCADE, related_name="canary_checks")
    previous_version = models.ForeignKey(
        ModelVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    activation = models.OneToOneField(
        ModelActivation,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="canary_check",
        help_text="The activation that triggered this check (none when run by hand).",
    )
    pass_rates = models.JSONField(default=dict)
    rank_correlation = models.FloatField(null=True, blank=True)
    details = models.JSONField(default=list)
    findings = models.JSONField(default=list, help_text="Canaries that passed before and fail now.")
    parameters = models.JSONField(default=dict)
    error = models.TextField(blank=True, help_text="Why the check could not run (it is recorded anyway).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        get_latest_by = "created_at"

    def __str__(self) -> str:
        return f"canary check {self.pk} of {self.model_version_id}"
