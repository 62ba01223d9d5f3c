"""Pages of the explanations app."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from explanations.attention import ROLLOUT_NORMALISATION
from explanations.attention_demo import worked_example


@login_required
def how_attention_works(request: HttpRequest) -> HttpResponse:
    """A small attention computation worked live by explanations.attention (any signed-in role)."""
    example = worked_example()

    def rows(matrix):
        return list(zip(example.tokens, matrix.tolist(), strict=True))

    context = {
        "ex": example,
        "qkv_rows": list(
            zip(example.tokens, example.q.tolist(), example.k.tolist(), example.v.tolist(), strict=True)
        ),
        "dot_rows": rows(example.dot),
        "scaled_rows": rows(example.scaled),
        "weight_rows": list(
            zip(example.tokens, example.weights.tolist(), example.weights.sum(axis=-1).tolist(), strict=True)
        ),
        "output_rows": rows(example.output),
        "masked_rows": list(
            zip(
                example.tokens,
                example.masked_weights.tolist(),
                example.masked_weights.sum(axis=-1).tolist(),
                strict=True,
            )
        ),
        "masked_output_rows": rows(example.masked_output),
        "focus_token": example.tokens[example.focus_row],
        "focus_before": example.weights[example.focus_row].tolist(),
        "focus_after": example.masked_weights[example.focus_row].tolist(),
        "focus_renormalised": example.focus_renormalised.tolist(),
        "masked_tokens": [t for t, keep in zip(example.tokens, example.key_mask, strict=True) if not keep],
        "chart_data": example.chart_data(),
        "rollout_normalisation": ROLLOUT_NORMALISATION,
    }
    return render(request, "explanations/how_attention_works.html", context)
