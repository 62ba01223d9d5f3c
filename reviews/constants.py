"""Constants of the reviews app, in one place."""

from datetime import date

from scoring.constants import MessageStatus

# Which explanation a reviewer sees when a prediction has several: one that passed its
# faithfulness check first, then by method in this order.
EXPLANATION_PREFERENCE: tuple[str, ...] = ("integrated_gradients", "occlusion")

NOTE_MAX_LENGTH = 5_000
REASON_MAX_LENGTH = 2_000
SEARCH_MAX_LENGTH = 200
# The records' date filters accept these days (a day near date.max would overflow a query bound).
RECORD_DATE_MIN = date(1900, 1, 1)
RECORD_DATE_MAX = date(2999, 12, 31)
BODY_PREVIEW_CHARS = 160
# Rows per fetch of the CSV export: small enough that the first bytes come quickly.
CSV_CHUNK_SIZE = 500
# How many candidates "Review next" tries before giving up when others keep winning the race.
CLAIM_ATTEMPTS = 25

# Statuses a reviewer can take a decision on, and the one a compliance admin decides.
REVIEWABLE = MessageStatus.IN_REVIEW
ESCALATED = MessageStatus.ESCALATED

# PostgreSQL advisory lock key that serialises appends to the audit chain ("CWCHAIN" in hex-ish).
CHAIN_ADVISORY_LOCK_KEY = 0x0C3C4A1A


class Agreement:
    """Filter values for "agreement with the model" on the records page."""

    AGREE = "agree"
    DISAGREE = "disagree"
    ESCALATED = "escalated"
    CHOICES = (
        (AGREE, "Agrees with the model"),
        (DISAGREE, "Disagrees with the model"),
        (ESCALATED, "Escalated"),
    )


class ReceivedWithin:
    """Date buckets of the review queue's date filter, by age of the message."""

    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    OLDER = "older"
    CHOICES = (
        (DAY, "Last 24 hours"),
        (WEEK, "Last 7 days"),
        (MONTH, "Last 30 days"),
        (OLDER, "Older than 30 days"),
    )
    DAYS = {DAY: 1, WEEK: 7, MONTH: 30}
