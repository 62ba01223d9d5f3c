"""Reads of the reviews app (selectors return QuerySets or plain data), one module per page
family; everything is importable from here."""

from reviews.selectors.audit import RecordEvidence, audit_chain_report, record_evidence
from reviews.selectors.evidence import (
    AttentionMeta,
    Evidence,
    attention_diagnostic,
    decision_snapshot,
    decisions_visible_to,
    explanation_for_review,
    message_evidence,
    snapshot_build,
)
from reviews.selectors.messages import messages_for_api_detail
from reviews.selectors.queue import (
    NO_SCORE,
    QUEUE_ORDER,
    FacetValue,
    QueueFacets,
    QueueFilters,
    in_priority_order,
    lock_held,
    queue_facets,
    queue_list,
    queue_messages,
    queue_page,
    queue_priority,
)
from reviews.selectors.records import (
    RecordFilters,
    decision_detail,
    decision_records,
    double_review_pair,
    escalated_messages,
    escalations_page,
    records_list,
    records_page,
)

__all__ = [
    "NO_SCORE",
    "QUEUE_ORDER",
    "AttentionMeta",
    "Evidence",
    "FacetValue",
    "QueueFacets",
    "QueueFilters",
    "RecordEvidence",
    "RecordFilters",
    "attention_diagnostic",
    "audit_chain_report",
    "decision_detail",
    "decision_records",
    "decision_snapshot",
    "decisions_visible_to",
    "double_review_pair",
    "escalated_messages",
    "escalations_page",
    "explanation_for_review",
    "in_priority_order",
    "lock_held",
    "message_evidence",
    "messages_for_api_detail",
    "queue_facets",
    "queue_list",
    "queue_messages",
    "queue_page",
    "queue_priority",
    "record_evidence",
    "records_list",
    "records_page",
    "snapshot_build",
]
