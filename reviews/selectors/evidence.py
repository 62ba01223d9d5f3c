"""Reads for one message: the evidence the review page shows, the attention diagnostic, and the
snapshot of that evidence a decision stores."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, User
from django.db.models import QuerySet, Subquery

from core.roles import AUDIT_ROLES, has_role
from explanations.models import AttentionDiagnostic, Explanation, ExplanationStatus
from reviews.audit import body_digest, words_digest
from reviews.constants import EXPLANATION_PREFERENCE
from reviews.highlight import Part, RuleSpan, Segment, build_parts, build_segments
from reviews.models import ReviewDecision, ReviewLock
from reviews.selectors.sources import name_attachment_parts
from scoring.models import ClaimType, Message, Prediction, RuleMatch


def explanation_for_review(prediction: Prediction | None) -> Explanation | None:
    """The explanation a reviewer is shown for a prediction: one that passed its faithfulness
    check if there is one, then the first method of EXPLANATION_PREFERENCE (a failed check or
    a failed computation is still shown, with what it means)."""
    if prediction is None:
        return None
    explanations = list(Explanation.objects.filter(prediction=prediction))
    if not explanations:
        return None

    def rank(explanation: Explanation) -> tuple[int, int, int]:
        method_rank = (
            EXPLANATION_PREFERENCE.index(explanation.method)
            if explanation.method in EXPLANATION_PREFERENCE
            else len(EXPLANATION_PREFERENCE)
        )
        return (
            0 if explanation.status == ExplanationStatus.OK else 1,
            0 if explanation.passed else 1,
            method_rank,
        )

    return min(explanations, key=rank)


@dataclass
class AttentionMeta:
    """What the attention panel needs to draw its selectors; the matrices come from JSON."""

    layers: int
    heads: int
    tokens: int
    normalisation: str


@dataclass
class Evidence:
    """Everything the evidence page shows about one message."""

    message: Message
    prediction: Prediction | None
    rule_matches: list[RuleMatch]
    explanation: Explanation | None
    segments: list[Segment]
    attention: AttentionMeta | None
    lock: ReviewLock | None
    decisions: list[ReviewDecision]

    @property
    def latest_decision(self) -> ReviewDecision | None:
        return self.decisions[0] if self.decisions else None

    @property
    def parts(self) -> list[Part]:
        """The body's display segments by message part (body, signature, quoted history)."""
        prediction = self.prediction
        parts = build_parts(
            self.message.body,
            self.segments,
            prediction.segments if prediction is not None else (),
            prediction.window_scores if prediction is not None else (),
        )
        return name_attachment_parts(parts, self.message.attachments)


def _rule_spans(rule_matches: list[RuleMatch]) -> list[RuleSpan]:
    return [
        RuleSpan(match.start, match.end, f"{match.rule_code} v{match.rule_set_version}")
        for match in rule_matches
    ]


def message_evidence(message_id: int, *, viewer: AbstractBaseUser | None = None) -> Evidence:
    """The evidence of one message (raises Message.DoesNotExist). With a `viewer`, the
    decisions are those the viewer may read (`decisions_visible_to`)."""
    message = Message.objects.select_related(
        "routing_prediction__model_version", "routing_prediction__claim_type"
    ).get(pk=message_id)
    prediction = message.routing_prediction
    rule_matches = list(RuleMatch.objects.filter(message=message).select_related("claim_type"))
    explanation = explanation_for_review(prediction)
    words = explanation.words if explanation and explanation.status == ExplanationStatus.OK else []
    segments = build_segments(message.body, words, _rule_spans(rule_matches))
    attention = None
    if prediction is not None:
        diagnostic = (
            AttentionDiagnostic.objects.filter(prediction=prediction)
            .only("layers", "heads", "tokens", "normalisation")
            .first()
        )
        if diagnostic is not None:
            attention = AttentionMeta(
                diagnostic.layers, diagnostic.heads, len(diagnostic.tokens), diagnostic.normalisation
            )
    lock = ReviewLock.objects.select_related("reviewer").filter(message=message).first()
    decisions = ReviewDecision.objects.filter(message=message).select_related("reviewer", "claim_type")
    if viewer is not None:
        decisions = decisions_visible_to(decisions, viewer)
    return Evidence(
        message, prediction, rule_matches, explanation, segments, attention, lock, list(decisions)
    )


def decisions_visible_to(
    decisions: QuerySet[ReviewDecision], viewer: AbstractBaseUser
) -> QuerySet[ReviewDecision]:
    """The decisions of `decisions` that `viewer` may read: auditors and compliance admins read
    every one; anybody else only their own, so that a reviewer never reads a colleague's decision,
    nor learns who made it, before deciding (blind review; the message API applies the same rule
    in reviews.selectors.messages_for_api_detail)."""
    if has_role(viewer, *AUDIT_ROLES):
        return decisions
    return decisions.filter(reviewer_id=viewer.pk)


def attention_diagnostic(message_id: int) -> AttentionDiagnostic:
    """The attention diagnostic of the message's routing prediction (raises DoesNotExist)."""
    prediction_id = Message.objects.filter(pk=message_id).values_list("routing_prediction_id", flat=True)
    return AttentionDiagnostic.objects.get(prediction_id=Subquery(prediction_id[:1]))


# --- Snapshot stored with a decision ----------------------------------------------------------------


def _explanation_snapshot(explanation: Explanation | None) -> dict[str, Any] | None:
    if explanation is None:
        return None
    return {
        "id": explanation.pk,
        "method": explanation.method,
        "status": explanation.status,
        "failure_reason": explanation.failure_reason,
        "passed": explanation.passed,
        "pass_rule": explanation.pass_rule,
        "verdict_text": explanation.verdict_text,
        "k": explanation.k,
        "top_words": explanation.top_words,
        "score_full": explanation.score_full,
        "score_without_top": explanation.score_without_top,
        "score_top_only": explanation.score_top_only,
        "comprehensiveness": explanation.comprehensiveness,
        "sufficiency": explanation.sufficiency,
        "random_baseline": explanation.random_baseline,
        "aopc": explanation.aopc,
        "flipped": explanation.flipped,
        # The heat-map the reviewer saw: its digest, so the record page and the audit can tell
        # whether the words stored now are those (reviews.audit.evidence_compare).
        "words_sha256": words_digest(explanation.words),
    }


def snapshot_build(
    *,
    message: Message,
    prediction: Prediction | None,
    rule_matches: list[RuleMatch],
    explanation: Explanation | None,
    reviewer: User | None = None,
    claim_type: ClaimType | None = None,
) -> dict[str, Any]:
    """The snapshot of evidence from rows already loaded (the prediction with its model version
    and claim type, the rule matches with their claim type). Shared by the decision service and
    the bulk seeder of bench_web, so both store the same shape.

    The message's sha256 is computed from the body the reviewer was shown (not copied from the
    stored column). With `reviewer`, the snapshot also keeps the names of the moment (the
    reviewer's username, the decided and predicted claim types' names): names are editable, and
    a record shows those it was decided under."""
    prediction_data = None
    if prediction is not None:
        prediction_data = {
            "id": prediction.pk,
            "model_version": {"id": prediction.model_version_id, "name": prediction.model_version.name},
            "score": prediction.score,
            "threshold": prediction.threshold,
            "flagged": prediction.flagged,
            "claim_type": prediction.claim_type.code if prediction.claim_type else None,
            "claim_type_name": prediction.claim_type.name if prediction.claim_type else None,
            "probabilities": prediction.probabilities,
            # How the model read the message, as the reviewer was shown it: its parts (body,
            # signature, quoted and already-seen history, attachments), each window's score, and
            # the context it was read with (a chat line's earlier lines). The record page draws
            # the message from these; the prediction row itself is not guarded once reviewed.
            "segments": prediction.segments,
            "window_scores": prediction.window_scores,
            "context": prediction.context,
        }
    matches = [
        {
            "rule_code": m.rule_code,
            "rule_set_version": m.rule_set_version,
            "claim_type": m.claim_type.code,
            "start": m.start,
            "end": m.end,
            "text": m.text,
        }
        for m in rule_matches
    ]
    snapshot: dict[str, Any] = {
        "message": {
            "id": message.pk,
            "external_id": message.external_id,
            "body_sha256": body_digest(message.body),
            "status": message.status,
            "route_reason": message.route_reason,
            "received_at": message.received_at.isoformat(),
        },
        "is_qa_sample": message.is_qa_sample,
        "prediction": prediction_data,
        "rule_matches": matches,
        "explanation": _explanation_snapshot(explanation),
    }
    if reviewer is not None:
        snapshot["decision"] = {
            "reviewer": reviewer.get_username(),
            "claim_type": {"code": claim_type.code, "name": claim_type.name} if claim_type else None,
        }
    return snapshot


def decision_snapshot(
    message: Message, *, reviewer: User | None = None, claim_type: ClaimType | None = None
) -> dict[str, Any]:
    """What a decision judged, as JSON-safe data: the routing prediction (model version,
    score, threshold, predicted claim type, probabilities, the message parts, window scores and
    context the model read), the rule matches, the explanation
    shown with its faithfulness verdict and the digest of its words, the message text's digest,
    the QA-sample flag, and (with `reviewer`) the names of the moment."""
    prediction = message.routing_prediction
    return snapshot_build(
        message=message,
        prediction=prediction,
        rule_matches=list(RuleMatch.objects.filter(message=message).select_related("claim_type")),
        explanation=explanation_for_review(prediction),
        reviewer=reviewer,
        claim_type=claim_type,
    )
