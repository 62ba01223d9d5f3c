"""Reads of the monitoring app (see each module's docstring for its definitions)."""

from monitoring.selectors.common import activation_markers, version_resolve
from monitoring.selectors.decisions import alerts, confusion, disagreement, effective_decisions, quality
from monitoring.selectors.drift import explanation_health, length_drift, rules_vs_model, score_drift
from monitoring.selectors.queue import queue_health

__all__ = [
    "activation_markers",
    "alerts",
    "confusion",
    "disagreement",
    "effective_decisions",
    "explanation_health",
    "length_drift",
    "quality",
    "queue_health",
    "rules_vs_model",
    "score_drift",
    "version_resolve",
]
