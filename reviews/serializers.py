"""API shape of a review decision (read-only: decisions are append-only), and of the message API's
detail, which nests the decisions its reader may see (scoring's serializers nest no decisions)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from explanations.serializers import ExplanationSerializer
from reviews.models import ReviewDecision
from scoring.models import Message
from scoring.serializers import MessageListSerializer, PredictionSerializer, RuleMatchSerializer


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


class MessageDetailSerializer(MessageListSerializer):
    shadow_predictions = serializers.SerializerMethodField()
    rule_matches = RuleMatchSerializer(many=True, read_only=True)
    explanations = serializers.SerializerMethodField()
    decisions = serializers.SerializerMethodField()
    timestamps = serializers.SerializerMethodField()

    class Meta(MessageListSerializer.Meta):
        fields = [
            *MessageListSerializer.Meta.fields,
            "body",
            "subject",
            "conversation",
            "headers",
            "attachments",
            "attempts",
            "timestamps",
            "shadow_predictions",
            "rule_matches",
            "explanations",
            "decisions",
        ]

    def get_timestamps(self, message: Message) -> dict[str, Any]:
        names = [
            "queued_at",
            "scored_at",
            "explained_at",
            "in_review_at",
            "escalated_at",
            "decided_at",
            "cleared_at",
            "failed_at",
            "updated_at",
        ]
        return {name: getattr(message, name) for name in names}

    def get_shadow_predictions(self, message: Message) -> list[dict[str, Any]]:
        shadows = [p for p in message.predictions.all() if p.is_shadow]
        return PredictionSerializer(shadows, many=True).data

    def get_explanations(self, message: Message) -> list[dict[str, Any]]:
        return ExplanationSerializer(message.explanations.all(), many=True).data

    def get_decisions(self, message: Message) -> list[dict[str, Any]]:
        """The decisions prefetched for the reader (selectors.messages_for_api_detail)."""
        return DecisionSerializer(message.decisions.all(), many=True).data
