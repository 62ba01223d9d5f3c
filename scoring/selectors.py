"""Reads of the scoring app. Each returns a QuerySet shaped for its caller (no N+1)."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from scoring.models import Message, Prediction, RuleMatch


def messages_for_api_list() -> QuerySet[Message]:
    return Message.objects.select_related(
        "routing_prediction__model_version", "routing_prediction__claim_type"
    ).defer("body")


def messages_for_api_detail() -> QuerySet[Message]:
    from explanations.models import Explanation
    from reviews.models import ReviewDecision

    return Message.objects.select_related(
        "routing_prediction__model_version", "routing_prediction__claim_type"
    ).prefetch_related(
        Prefetch("predictions", queryset=Prediction.objects.select_related("model_version", "claim_type")),
        Prefetch("rule_matches", queryset=RuleMatch.objects.select_related("claim_type")),
        Prefetch("explanations", queryset=Explanation.objects.select_related("model_version")),
        Prefetch(
            "decisions",
            queryset=ReviewDecision.objects.select_related(
                "reviewer", "claim_type", "model_version"
            ).order_by("sequence"),
        ),
    )
