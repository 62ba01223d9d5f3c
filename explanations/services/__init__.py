"""Writes of the explanations app (services take keyword-only arguments)."""

from explanations.services.explain import decode_array, encode_array, messages_explain_batch
from explanations.services.reports import (
    canary_check_enqueue,
    canary_check_for_activation,
    canary_check_run,
    canary_comparison,
    faithfulness_report_create,
)

__all__ = [
    "canary_check_enqueue",
    "canary_check_for_activation",
    "canary_check_run",
    "canary_comparison",
    "decode_array",
    "encode_array",
    "faithfulness_report_create",
    "messages_explain_batch",
]
