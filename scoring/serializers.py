"""API shapes of the scoring app. Validation of types only; domain rules live in services."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from rest_framework import serializers

from scoring.constants import Channel
from scoring.models import Message, Prediction, RuleMatch
from scoring.services.ingest import IncomingMessage


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers, booleans, lists... instead of coercing them to text."""

    default_error_messages = {"not_a_string": "Must be a string, not {kind}."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string", kind=type(data).__name__)
        return super().to_internal_value(data)


class MessageInSerializer(serializers.Serializer):
    """One incoming message. Body length is checked by the service (it answers 413)."""

    external_id = StrictCharField(max_length=200, trim_whitespace=False)
    body = StrictCharField(trim_whitespace=False, allow_blank=True)
    sender = StrictCharField(max_length=300, required=False, allow_blank=True, default="")
    channel = serializers.ChoiceField(choices=Channel.choices, required=False, default=Channel.OTHER)
    received_at = serializers.DateTimeField(required=False, allow_null=True, default=None)

    def to_incoming(self) -> IncomingMessage:
        data = self.validated_data
        return IncomingMessage(
            external_id=data["external_id"],
            body=data["body"],
            sender=data.get("sender", ""),
            channel=data.get("channel", Channel.OTHER),
            received_at=data.get("received_at"),
        )


class BulkInSerializer(serializers.Serializer):
    messages = serializers.ListField(child=serializers.JSONField(), allow_empty=False)


def message_url(message: Message) -> str:
    return reverse("api-message-detail", kwargs={"pk": message.pk})


class MessageAcceptedSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = ["id", "external_id", "status", "url"]

    def get_url(self, message: Message) -> str:
        return message_url(message)


class PredictionSerializer(serializers.ModelSerializer):
    model_version = serializers.SlugRelatedField(slug_field="name", read_only=True)
    claim_type = serializers.SlugRelatedField(slug_field="code", read_only=True)

    class Meta:
        model = Prediction
        fields = [
            "id",
            "model_version",
            "score",
            "claim_type",
            "probabilities",
            "window_scores",
            "threshold",
            "flagged",
            "is_shadow",
            "latency_ms",
            "created_at",
        ]


class RuleMatchSerializer(serializers.ModelSerializer):
    claim_type = serializers.SlugRelatedField(slug_field="code", read_only=True)

    class Meta:
        model = RuleMatch
        fields = ["rule_id", "rule_code", "rule_set_version", "claim_type", "start", "end", "text"]


class MessageListSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    prediction = PredictionSerializer(source="routing_prediction", read_only=True)

    class Meta:
        model = Message
        fields = [
            "id",
            "external_id",
            "url",
            "sender",
            "channel",
            "received_at",
            "status",
            "status_reason",
            "route_reason",
            "is_qa_sample",
            "has_rule_hit",
            "prediction",
            "created_at",
        ]

    def get_url(self, message: Message) -> str:
        return message_url(message)


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
        from explanations.serializers import ExplanationSerializer

        return ExplanationSerializer(message.explanations.all(), many=True).data

    def get_decisions(self, message: Message) -> list[dict[str, Any]]:
        """The decisions prefetched for the reader (selectors.messages_for_api_detail)."""
        from reviews.serializers import DecisionSerializer

        return DecisionSerializer(message.decisions.all(), many=True).data
