"""API shapes of the scoring app. Validation of types only; domain rules live in services."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.urls import reverse
from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from scoring.constants import FEED_STATUS, Channel, FeedStatus
from scoring.models import Message, Prediction, RuleMatch
from scoring.services.ingest import IncomingMessage
from scoring.text import content_pattern


class StrictCharField(serializers.CharField):
    """A CharField that refuses numbers, booleans, lists... instead of coercing them to text."""

    default_error_messages = {"not_a_string": "Must be a string, not {kind}."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string", kind=type(data).__name__)
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """A serializer that refuses a key it does not read (400 invalid, the key named in the
    details with the fields there are) instead of dropping it: a misspelt optional field
    (`recieved_at`) was stored as if absent. The API refuses unknown query parameters the same way
    (core.filters); the schema says `additionalProperties: false` (StrictSerializerSchema)."""

    def to_internal_value(self, data: Any) -> Any:
        unknown = sorted(set(data) - set(self.fields)) if isinstance(data, Mapping) else []
        errors: dict[str, Any] = {
            name: [f"Not a field of this body; its fields are: {', '.join(self.fields)}."] for name in unknown
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not unknown or not isinstance(exc.detail, dict):
                raise
            raise serializers.ValidationError({**errors, **exc.detail}) from exc
        if errors:
            raise serializers.ValidationError(errors)
        return value


class StrictSerializerSchema(OpenApiSerializerExtension):
    """A StrictSerializer's schema: the one drf-spectacular builds, closed to other properties."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        return {**schema, "additionalProperties": False}


# What the ingest service accepts, for the schema (scoring.services.ingest.validate_incoming
# checks it and answers with a specific code): an external_id of some text that is not only
# whitespace, and no NUL character (DRF refuses NUL in every text field). Both patterns run in
# linear time. A body's pattern is the scorer's own rule (scoring.text.content_pattern).
HAS_TEXT_PATTERN = r"^\s*[^\x00\s][^\x00]*$"
NO_NUL_PATTERN = r"^[^\x00]*$"

BODY_DESCRIPTION = (
    "The message text, at most MAX_BODY_CHARS characters (over it: 413 too_large). It must hold "
    "a character the model reads: a text of only whitespace, control or format characters (a "
    "zero-width space U+200B, a soft hyphen U+00AD, a BEL U+0007...), combining marks on no "
    "letter (U+0301 alone), the replacement character U+FFFD, unassigned or private-use code "
    "points has nothing to score and is refused with 400 empty_body, as an empty one is. "
    "The pattern spells out exactly that rule (and no NUL character)."
)


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": 200, "pattern": HAS_TEXT_PATTERN})
class ExternalIdField(StrictCharField):
    """A feed's id for the message: 1-200 characters, not only whitespace."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=200, trim_whitespace=False, **kwargs)


class BodyField(StrictCharField):
    """The message text. Emptiness, by the scorer's rule (400 empty_body), and length (413
    too_large, over MAX_BODY_CHARS) are the service's to judge, each with its own code; the
    schema states both (BodyFieldSchema)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if data == "":
            return data  # not DRF's "may not be blank": the service answers empty_body
        return super().run_validation(data)


class BodyFieldSchema(OpenApiSerializerFieldExtension):
    """BodyField in the schema, built when the schema is: its pattern lists every character
    without content, which takes a walk over Unicode that no request should pay for."""

    target_class = BodyField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": settings.MAX_BODY_CHARS,
            "pattern": content_pattern(),
            "description": BODY_DESCRIPTION,
        }


class MessageInSerializer(StrictSerializer):
    """One incoming message: these fields and no other (an unknown one, such as a misspelt
    `recieved_at`, is a 400 naming it). Body length is checked by the service (it answers 413)."""

    external_id = ExternalIdField()
    body = BodyField()
    sender = StrictCharField(
        max_length=300,
        required=False,
        allow_blank=True,
        default="",
        validators=[RegexValidator(NO_NUL_PATTERN, "Must not contain a NUL character.")],
    )
    channel = serializers.ChoiceField(choices=Channel.choices, required=False, default=Channel.OTHER)
    received_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When the message was received, ISO 8601 (without an offset: UTC); absent or null: "
        "when it is stored. Any time in the past; in the future at most "
        f"RECEIVED_AT_MAX_SKEW_SECONDS ({settings.RECEIVED_AT_MAX_SKEW_SECONDS:,}) after the "
        "server's clock, later is refused (400 invalid).",
    )

    def to_incoming(self) -> IncomingMessage:
        data = self.validated_data
        return IncomingMessage(
            external_id=data["external_id"],
            body=data["body"],
            sender=data.get("sender", ""),
            channel=data.get("channel", Channel.OTHER),
            received_at=data.get("received_at"),
        )


class BulkInSerializer(StrictSerializer):
    """The bulk envelope (for the schema and its field names: the view reads it itself, to give
    each item its own error). Over BULK_MAX_ITEMS messages: 413."""

    messages = serializers.ListField(
        child=MessageInSerializer(), allow_empty=False, min_length=1, max_length=settings.BULK_MAX_ITEMS
    )


def message_url(message: Message) -> str:
    return reverse("api-message-detail", kwargs={"pk": message.pk})


def message_status_url(message: Message) -> str:
    return reverse("api-message-status", kwargs={"pk": message.pk})


class MessageStatusSerializer(serializers.ModelSerializer):
    """What the submitting feed may read of its message: where it is in the pipeline
    (scoring.constants.FeedStatus), never what the model or a reviewer made of it. `url` is this
    status's own address."""

    status = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = ["id", "external_id", "status", "url"]

    @extend_schema_field(serializers.ChoiceField(choices=FeedStatus.choices))
    def get_status(self, message: Message) -> str:
        return FEED_STATUS[message.status]

    def get_url(self, message: Message) -> str:
        return message_status_url(message)


class MessageAcceptedSerializer(MessageStatusSerializer):
    """The answer to an ingest: the stored message's id and its status, as its feed sees it."""


class MessageStatusDetailSerializer(MessageStatusSerializer):
    class Meta(MessageStatusSerializer.Meta):
        fields = [*MessageStatusSerializer.Meta.fields, "received_at", "created_at"]


class BulkItemErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField(allow_null=True)


class BulkItemResultSerializer(serializers.Serializer):
    """One item of a bulk request: created, duplicate (the stored message: same feed, same id,
    same body) or error (a conflict: same id, another body)."""

    index = serializers.IntegerField()
    result = serializers.ChoiceField(choices=["created", "duplicate", "error"])
    id = serializers.IntegerField(required=False)
    external_id = serializers.CharField(required=False)
    status = serializers.ChoiceField(choices=FeedStatus.choices, required=False)
    url = serializers.CharField(required=False)
    error = BulkItemErrorSerializer(required=False)


class BulkResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    errors = serializers.IntegerField()
    results = BulkItemResultSerializer(many=True)


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
