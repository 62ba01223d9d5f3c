"""API shape of an explanation and its faithfulness check."""

from __future__ import annotations

from rest_framework import serializers

from explanations.models import Explanation


class ExplanationSerializer(serializers.ModelSerializer):
    model_version = serializers.SlugRelatedField(slug_field="name", read_only=True)
    converged = serializers.BooleanField(
        read_only=True,
        allow_null=True,
        help_text="IG only: |convergence_delta| within the tolerance (the word scores add up).",
    )

    class Meta:
        model = Explanation
        fields = [
            "id",
            "method",
            "status",
            "failure_reason",
            "model_version",
            "prediction_id",
            "window_start",
            "window_end",
            "words",
            "top_words",
            "k",
            "score_full",
            "score_without_top",
            "score_top_only",
            "comprehensiveness",
            "sufficiency",
            "random_baseline",
            "aopc",
            "aopc_curve",
            "flipped",
            "threshold",
            "passed",
            "pass_rule",
            "verdict_text",
            "rule_agreement",
            "n_steps",
            "convergence_delta",
            "converged",
            "precision",
            "compute_ms",
            "created_at",
        ]
