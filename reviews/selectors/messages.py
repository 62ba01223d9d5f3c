"""The message API's detail read (GET /api/messages/<id>/): a message with its predictions, rule
matches, explanations and the decisions its reader may see. It lives in reviews because it reads
review decisions (scoring reads none)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Prefetch, QuerySet

from core.roles import AUDIT_ROLES, has_role
from explanations.models import Explanation
from reviews.models import ReviewDecision
from scoring.models import Message, Prediction, RuleMatch


def messages_for_api_detail(user: AbstractBaseUser) -> QuerySet[Message]:
    """Messages with everything the detail shows. Decision records are the auditor's and the
    compliance admin's to read (the brief's role table); a reviewer gets the decisions they
    made, the ingest service none."""
    decisions = ReviewDecision.objects.select_related("reviewer", "claim_type", "model_version")
    if not has_role(user, *AUDIT_ROLES):
        decisions = decisions.filter(reviewer_id=user.pk)
    return Message.objects.select_related(
        "routing_prediction__model_version", "routing_prediction__claim_type"
    ).prefetch_related(
        Prefetch("predictions", queryset=Prediction.objects.select_related("model_version", "claim_type")),
        Prefetch("rule_matches", queryset=RuleMatch.objects.select_related("claim_type")),
        Prefetch("explanations", queryset=Explanation.objects.select_related("model_version")),
        Prefetch("decisions", queryset=decisions.order_by("sequence")),
    )
