"""API shape of a review decision (read-only: decisions are append-only)."""

from __future__ import annotations

from rest_framework import serializers

from reviews.models import ReviewDecision


class DecisionSerializer(serializers.ModelSerializer):
    reviewer = serializers.SlugRelatedField(slug_field="username", read_only=True)
    claim_type = serializers.SlugRelatedField(slug_field="code", read_only=True)
    model_version = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ReviewDecision
        fields = [
            "id",
            "sequence",
            "reviewer",
            "verdict",
            "claim_type",
            "note",
            "escalation_reason",
            "supersedes_id",
            "supersede_reason",
            "is_second_level",
            "model_version",
            "model_score",
            "model_threshold",
            "model_flagged",
            "agrees_with_model",
            "claim_type_matches",
            "snapshot",
            "created_at",
            "content_hash",
            "previous_hash",
        ]
        read_only_fields = fields
