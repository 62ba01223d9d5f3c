"""Constants and choices of the scoring app, in one place."""

from django.db import models

NO_CLAIM = "no_claim"
# Class order of the classifier head. Index 0 is no_claim; the claim codes follow in this order.
CLAIM_TYPE_CODES: tuple[str, ...] = (
    "guaranteed_returns",
    "risk_free",
    "performance_forecast",
    "regulatory_endorsement",
)
CLASS_LABELS: tuple[str, ...] = (NO_CLAIM, *CLAIM_TYPE_CODES)


class MessageStatus(models.TextChoices):
    RECEIVED = "received", "Received"
    QUEUED = "queued", "Queued for scoring"
    SCORED = "scored", "Scored"
    EXPLAINED = "explained", "Explained"
    IN_REVIEW = "in_review", "In review"
    ESCALATED = "escalated", "Escalated"
    DECIDED = "decided", "Decided"
    CLEARED = "cleared", "Cleared"
    FAILED = "failed", "Failed"


class FeedStatus(models.TextChoices):
    """What a feed (an ingest account) may know of its own message: where it is in the pipeline,
    not what the model or a reviewer made of it. Every message is `processed` from the moment it
    is scored, flagged or not, so the status is no oracle of the model."""

    RECEIVED = "received", "Received, waiting to be scored"
    PROCESSED = "processed", "Scored"
    FAILED = "failed", "Failed"


FEED_STATUS: dict[str, str] = {
    MessageStatus.RECEIVED: FeedStatus.RECEIVED,
    MessageStatus.QUEUED: FeedStatus.RECEIVED,
    MessageStatus.FAILED: FeedStatus.FAILED,
    **{
        status: FeedStatus.PROCESSED
        for status in MessageStatus.values
        if status not in (MessageStatus.RECEIVED, MessageStatus.QUEUED, MessageStatus.FAILED)
    },
}


def statuses_of(feed_status: str) -> list[str]:
    """The message statuses a feed status stands for (for filtering)."""
    return [status for status, shown in FEED_STATUS.items() if shown == feed_status]


# Allowed status transitions. Anything else is a bug and raises InvalidTransition.
TRANSITIONS: dict[str, frozenset[str]] = {
    MessageStatus.RECEIVED: frozenset({MessageStatus.QUEUED, MessageStatus.FAILED}),
    MessageStatus.QUEUED: frozenset({MessageStatus.QUEUED, MessageStatus.SCORED, MessageStatus.FAILED}),
    MessageStatus.SCORED: frozenset(
        {MessageStatus.EXPLAINED, MessageStatus.CLEARED, MessageStatus.IN_REVIEW, MessageStatus.FAILED}
    ),
    MessageStatus.EXPLAINED: frozenset({MessageStatus.IN_REVIEW}),
    MessageStatus.IN_REVIEW: frozenset({MessageStatus.DECIDED, MessageStatus.ESCALATED}),
    MessageStatus.ESCALATED: frozenset({MessageStatus.DECIDED}),
    # decided -> escalated: a correction to an escalation, or two blind reviews that disagree;
    # decided -> in_review: drawn for a blind second review (reviews.double_review).
    MessageStatus.DECIDED: frozenset({MessageStatus.ESCALATED, MessageStatus.IN_REVIEW}),
    MessageStatus.CLEARED: frozenset(),
    MessageStatus.FAILED: frozenset({MessageStatus.QUEUED}),
}

# A message in these statuses has a review decision: its text is evidence of that decision and is
# immutable (scoring.models.Message; the reviews app guards it in the database too).
REVIEWED_STATUSES: frozenset[str] = frozenset({MessageStatus.ESCALATED, MessageStatus.DECIDED})

# Which timestamp field records entry into a status.
STATUS_TIMESTAMP_FIELD: dict[str, str] = {
    MessageStatus.QUEUED: "queued_at",
    MessageStatus.SCORED: "scored_at",
    MessageStatus.EXPLAINED: "explained_at",
    MessageStatus.IN_REVIEW: "in_review_at",
    MessageStatus.ESCALATED: "escalated_at",
    MessageStatus.DECIDED: "decided_at",
    MessageStatus.CLEARED: "cleared_at",
    MessageStatus.FAILED: "failed_at",
}


class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    CHAT = "chat", "Chat"
    SMS = "sms", "SMS"
    OTHER = "other", "Other"


class RouteReason(models.TextChoices):
    """Why a scored message went where it went."""

    MODEL_FLAG = "model_flag", "Model score at or above threshold"
    RULE_HIT = "rule_hit", "Rule matched"
    MODEL_AND_RULE = "model_and_rule", "Model flag and rule match"
    UNREAD_PART = "unread_part", "Below threshold, but a part of it could not be read"
    QA_SAMPLE = "qa_sample", "Random QA sample below threshold"
    CLEARED = "cleared", "Below threshold, no rule"


# metrics.json's "routing_rules": what a version's evaluation sets' "routed" decisions were
# measured with (training writes it, the version page reads it).
ROUTING_RULES_ACTIVE = "the active rule set"
ROUTING_RULES_NONE = "none (model flag only)"
