"""Constants of the monitoring app, in one place."""

from datetime import timedelta

from scoring.constants import RouteReason

# Routing strata of the recall estimator (monitoring.stats.recall_estimate).
FLAGGED_ROUTES: tuple[str, ...] = (RouteReason.MODEL_FLAG, RouteReason.MODEL_AND_RULE)
RULE_ONLY_ROUTES: tuple[str, ...] = (RouteReason.RULE_HIT,)
UNREAD_PART_ROUTES: tuple[str, ...] = (RouteReason.UNREAD_PART,)
BELOW_THRESHOLD_ROUTES: tuple[str, ...] = (RouteReason.QA_SAMPLE, RouteReason.CLEARED)

# Roll-up watermark: how far application timestamps may precede their transaction's start.
WATERMARK_SKEW = timedelta(seconds=60)

# Series key of the all-claim-types line (every reviewed message, true negatives included).
ALL = "all"
NO_CLAIM = "no_claim"

# Queue health: the window of "decisions per reviewer per day".
QUEUE_DAYS = 30
# Message statuses that wait on people or workers, in pipeline order.
WAITING_STATUSES: tuple[str, ...] = ("received", "queued", "scored", "explained", "in_review", "escalated")

# Score PSI: a reference histogram over 20 bins needs a few hundred messages to mean anything.
SCORE_REFERENCE_MIN_MESSAGES = 200
