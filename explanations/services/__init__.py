"""Writes of the explanations app (services take keyword-only arguments)."""

from explanations.attention_codec import decode_array, encode_array
from explanations.services.explain import messages_explain_batch
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
