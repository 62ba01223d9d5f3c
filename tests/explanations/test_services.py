"""messages_explain_batch on the tiny model: statuses, rows, idempotency, recorded failures."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import OperationalError
from rest_framework.test import APIClient

import explanations.engine as engine
from explanations.attribution import resolve_precision
from explanations.faithfulness import IG_DELTA_TOLERANCE, PASS_RULE
from explanations.models import AttentionDiagnostic, Explanation, ExplanationMethod, ExplanationStatus
from explanations.services import decode_array, messages_explain_batch
from governance.services.model_versions import model_version_activate, model_version_with_threshold
from scoring.constants import MessageStatus
from scoring.errors import ModelNotReady
from scoring.models import Message
from scoring.services.pipeline import messages_score_batch
from tests.factories import MessageFactory

pytestmark = pytest.mark.django_db

CLAIMS = [
    "Your returns are guaranteed at 12 percent every year.",
    "This investment is completely risk-free.",
    "We guarantee a 9% annual return on this fund.",
]


@pytest.fixture(autouse=True)
def no_qa_sample(settings):
    settings.QA_SAMPLE_RATE = 0.0
    settings.IG_N_STEPS = 16


def scored(bodies: list[str]) -> list[Message]:
    """Messages ingested and scored by the real pipeline (flagged or rule-hit ones end `scored`)."""
    messages = [MessageFactory(body=body, status=MessageStatus.QUEUED) for body in bodies]
    messages_score_batch(message_ids=[m.pk for m in messages])
    for message in messages:
        message.refresh_from_db()
    return messages


def with_threshold(version, threshold: float):
    variant = model_version_with_threshold(version=version, threshold=threshold, reason="test routing")
    model_version_activate(version=variant, reason="test routing")
    return variant


def test_a_flagged_message_is_explained_checked_and_moved_to_review(tiny_model_version, settings):
    # given
    (message,) = scored([CLAIMS[0]])
    assert message.status == MessageStatus.SCORED
    # when
    outcome = messages_explain_batch(message_ids=[message.pk])
    # then
    assert outcome == {"explained": 1, "failed": 0, "deferred": 0, "skipped": 0}
    message.refresh_from_db()
    assert message.status == MessageStatus.IN_REVIEW
    assert message.explained_at is not None and message.in_review_at >= message.explained_at
    rows = {e.method: e for e in Explanation.objects.filter(message=message)}
    assert set(rows) == {ExplanationMethod.INTEGRATED_GRADIENTS, ExplanationMethod.OCCLUSION}
    for row in rows.values():
        assert row.status == ExplanationStatus.OK
        assert row.prediction_id == message.routing_prediction_id
        assert row.model_version_id == tiny_model_version.pk
        assert row.threshold == tiny_model_version.threshold
        assert row.words and all(message.body[w["start"] : w["end"]] == w["word"] for w in row.words)
        assert 1 <= row.k == len(row.top_words) <= 10
        assert {(w["start"], w["end"]) for w in row.top_words} <= {(w["start"], w["end"]) for w in row.words}
        assert row.comprehensiveness == pytest.approx(row.score_full - row.score_without_top)
        assert row.sufficiency == pytest.approx(row.score_full - row.score_top_only)
        assert [p["fraction"] for p in row.aopc_curve] == [0.01, 0.05, 0.10, 0.20, 0.50]
        assert row.pass_rule == PASS_RULE and row.verdict_text
        assert row.passed is not None and row.flipped is not None
        assert row.rule_agreement is not None  # "returns are guaranteed" is a rule hit
        assert row.compute_ms > 0
        assert (row.window_start, row.window_end) == (0, len(message.body))
    ig = rows[ExplanationMethod.INTEGRATED_GRADIENTS]
    assert ig.n_steps == settings.IG_N_STEPS  # converged at once: no refinement
    assert abs(ig.convergence_delta) <= IG_DELTA_TOLERANCE
    assert ig.precision == resolve_precision(settings.IG_PRECISION, "cpu")
    # and the attention diagnostic of the same window is stored, padding excluded
    diagnostic = AttentionDiagnostic.objects.get(prediction=message.routing_prediction)
    weights = decode_array(diagnostic.weights)
    n = len(diagnostic.tokens)
    assert weights.dtype == np.float16 and weights.shape == (diagnostic.layers, diagnostic.heads, n, n)
    np.testing.assert_allclose(weights.astype(np.float32).sum(axis=-1), 1.0, atol=5e-3)
    assert decode_array(diagnostic.rollout).shape == (n, n)
    assert diagnostic.tokens[0] == "[CLS]" and diagnostic.tokens[-1] == "[SEP]"


def test_explaining_the_same_messages_again_changes_nothing(tiny_model_version):
    messages = scored(CLAIMS)
    ids = [m.pk for m in messages if m.status == MessageStatus.SCORED]
    assert len(ids) == 3
    first = messages_explain_batch(message_ids=ids)
    rows = list(Explanation.objects.order_by("id").values_list("id", "method", "comprehensiveness"))
    second = messages_explain_batch(message_ids=ids)
    assert first["explained"] == 3
    assert second == {"explained": 0, "failed": 0, "deferred": 0, "skipped": 3}
    assert list(Explanation.objects.order_by("id").values_list("id", "method", "comprehensiveness")) == rows
    assert AttentionDiagnostic.objects.count() == 3


def test_a_batch_of_messages_is_attributed_in_one_computation(tiny_model_version, monkeypatch):
    calls = []
    real = engine.integrated_gradients

    def counting(scorer, spans, **kwargs):
        calls.append(len(spans))
        return real(scorer, spans, **kwargs)

    monkeypatch.setattr(engine, "integrated_gradients", counting)
    messages = scored(CLAIMS)
    messages_explain_batch(message_ids=[m.pk for m in messages])
    assert calls == [3]


def test_only_scored_messages_are_explained(tiny_model_version):
    (message,) = scored([CLAIMS[1]])
    other = MessageFactory(status=MessageStatus.RECEIVED)
    outcome = messages_explain_batch(message_ids=[message.pk, other.pk, 10**9])
    assert outcome == {"explained": 1, "failed": 0, "deferred": 0, "skipped": 2}
    other.refresh_from_db()
    assert other.status == MessageStatus.RECEIVED
    assert not Explanation.objects.filter(message=other).exists()


def test_a_message_without_words_is_recorded_as_failed_and_still_reaches_review(tiny_model_version):
    # given a version that flags everything, and a message that has no word to delete
    with_threshold(tiny_model_version, 0.0)
    good, bad = scored([CLAIMS[0], "!!! ??? 🚀🚀"])
    assert bad.status == MessageStatus.SCORED
    # when
    outcome = messages_explain_batch(message_ids=[good.pk, bad.pk])
    # then the bad message fails alone, with the reason, and nothing waits
    assert outcome == {"explained": 1, "failed": 1, "deferred": 0, "skipped": 0}
    bad.refresh_from_db()
    assert bad.status == MessageStatus.IN_REVIEW and bad.explained_at is None
    assert bad.status_reason.startswith("explanation failed: the explained text has no words")
    failed = Explanation.objects.filter(message=bad)
    assert failed.count() == 2
    assert all(e.status == ExplanationStatus.FAILED and "no words" in e.failure_reason for e in failed)
    assert Explanation.objects.filter(message=good, status=ExplanationStatus.OK).count() == 2


def test_a_model_that_cannot_be_loaded_is_a_recorded_failure(tiny_model_version):
    (message,) = scored([CLAIMS[2]])

    def broken(version):
        raise ModelNotReady(f"Model version {version.name}: the artifact is missing")

    outcome = messages_explain_batch(message_ids=[message.pk], scorer_factory=broken)
    assert outcome == {"explained": 0, "failed": 1, "deferred": 0, "skipped": 0}
    message.refresh_from_db()
    assert message.status == MessageStatus.IN_REVIEW
    assert "the artifact is missing" in message.status_reason
    reason = f"Model version {tiny_model_version.name}: the artifact is missing"
    assert {e.failure_reason for e in Explanation.objects.filter(message=message)} == {
        f"the explanation could not be computed: {reason}"
    }


def test_a_database_error_propagates_so_that_the_task_retries(tiny_model_version):
    (message,) = scored([CLAIMS[2]])

    def database_down(version):
        raise OperationalError("connection refused")

    with pytest.raises(OperationalError):
        messages_explain_batch(message_ids=[message.pk], scorer_factory=database_down)
    message.refresh_from_db()
    assert message.status == MessageStatus.SCORED
    assert not Explanation.objects.exists()


def test_a_rule_hit_the_model_did_not_flag_gets_a_verdict_that_says_so(tiny_model_version):
    # given a version that flags nothing: the message goes to review only because of its rule hit
    with_threshold(tiny_model_version, 1.0)
    (message,) = scored([CLAIMS[0]])
    assert message.status == MessageStatus.SCORED and message.route_reason == "rule_hit"
    # when
    messages_explain_batch(message_ids=[message.pk])
    # then
    for row in Explanation.objects.filter(message=message):
        assert row.flipped is False
        assert row.threshold == 1.0
        assert "did not flag this message" in row.verdict_text
        assert "does not explain the flag" not in row.verdict_text
        assert row.rule_agreement is not None


def test_the_api_shows_the_explanations_of_a_message(tiny_model_version, reviewer, settings):
    (message,) = scored([CLAIMS[0]])
    messages_explain_batch(message_ids=[message.pk])
    client = APIClient()
    client.force_authenticate(reviewer)
    data = client.get(f"/api/messages/{message.pk}/").json()
    assert data["status"] == MessageStatus.IN_REVIEW
    methods = {e["method"]: e for e in data["explanations"]}
    assert set(methods) == {"integrated_gradients", "occlusion"}
    ig = methods["integrated_gradients"]
    assert ig["verdict_text"] and ig["pass_rule"] == PASS_RULE and ig["n_steps"] == 16
    assert ig["converged"] is (abs(ig["convergence_delta"]) <= IG_DELTA_TOLERANCE)
    assert ig["precision"] == resolve_precision(settings.IG_PRECISION, "cpu")
    assert ig["words"][0]["word"] == message.body[ig["words"][0]["start"] : ig["words"][0]["end"]]
    assert ig["model_version"] == tiny_model_version.name


def test_a_message_the_device_has_no_memory_for_stays_scored_and_is_published_again(
    tiny_model_version, django_capture_on_commit_callbacks
):
    from unittest import mock

    from scoring.errors import DeviceOutOfMemory

    with_threshold(tiny_model_version, 0.0)
    big, small = scored([CLAIMS[0], CLAIMS[1]])
    real = engine.integrated_gradients

    def tight(scorer, spans, **options):  # IG of the big message never fits, even alone
        if any(span.text in big.body for span in spans):
            raise DeviceOutOfMemory("Integrated Gradients of one text does not fit in cuda:0's free memory")
        return real(scorer, spans, **options)

    with (
        mock.patch.object(engine, "integrated_gradients", tight),
        mock.patch("explanations.tasks.explain_batch.apply_async") as publish,
        django_capture_on_commit_callbacks(execute=True),
    ):
        outcome = messages_explain_batch(message_ids=[big.pk, small.pk])

    assert outcome == {"explained": 1, "failed": 0, "deferred": 1, "skipped": 0}
    big.refresh_from_db()
    assert big.status == MessageStatus.SCORED and big.status_reason == ""
    assert not Explanation.objects.filter(message=big).exists()  # occlusion's result waits with it
    assert Explanation.objects.filter(message=small, status=ExplanationStatus.OK).count() == 2
    (call,) = publish.call_args_list
    assert call.kwargs["args"] == [[big.pk]] and call.kwargs["countdown"] > 0


def test_a_device_that_fails_while_explaining_records_no_failure_and_changes_nothing(tiny_model_version):
    from unittest import mock

    from scoring.errors import DeviceFailed

    with_threshold(tiny_model_version, 0.0)
    (message,) = scored([CLAIMS[0]])

    def broken(scorer, spans, **options):
        raise RuntimeError("CUDA error: unspecified launch failure")

    with mock.patch.object(engine, "integrated_gradients", broken), pytest.raises(DeviceFailed):
        messages_explain_batch(message_ids=[message.pk])
    message.refresh_from_db()
    assert message.status == MessageStatus.SCORED and not Explanation.objects.filter(message=message).exists()


def test_the_parts_the_prediction_read_are_the_parts_explained(tiny_model_version, monkeypatch):
    """An email's attachment is a part only its source knows (scoring.services.context): the
    explanation must window the message as the prediction did, or it explains another window."""
    body = "See the note attached.\n\n[Attachment: note.txt · text/plain · 40 bytes]\n" + CLAIMS[0]
    at = body.index("[Attachment")
    attachment = {"name": "note.txt", "content_type": "text/plain", "size": 40, "scored": True, "note": ""}
    message = MessageFactory(
        body=body, status=MessageStatus.QUEUED, attachments=[{**attachment, "start": at, "end": len(body)}]
    )
    messages_score_batch(message_ids=[message.pk])
    message.refresh_from_db()
    seen = []
    real = engine.explained_spans

    def spying(scorer, items):
        seen.extend(items)
        return real(scorer, items)

    monkeypatch.setattr(engine, "explained_spans", spying)

    messages_explain_batch(message_ids=[message.pk])

    (item,) = seen
    stored = [(p["kind"], p["start"], p["end"]) for p in message.routing_prediction.segments]
    assert ("attachment", at, len(body)) in stored
    assert [(s.kind, s.start, s.end) for s in item.segments] == stored
