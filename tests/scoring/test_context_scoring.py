"""What a message is read with beyond its own text (scoring.services.context): an email's
attachments as parts of their own, quoted history already seen in the thread not scored again,
and a claim split over chat lines caught on the line that completes it, through the real
pipeline with the tiny model."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from explanations.models import Explanation
from explanations.services import messages_explain_batch
from reviews.selectors import queue_messages
from scoring.constants import MessageStatus
from scoring.models import Message, Prediction
from scoring.segmentation import ATTACHMENT, SEEN
from scoring.services.context import scoring_plan
from scoring.services.pipeline import messages_score_batch
from scoring.services.sources import sources_ingest
from scoring.sources.mail import parse_email
from scoring.sources.mailgen import AttachmentSpec
from tests.scoring.sources.mail_fixtures import mail

pytestmark = pytest.mark.django_db


def store(*raws: bytes) -> list[Message]:
    results = sources_ingest(items=[parse_email(raw) for raw in raws])
    return [r.message for r in results]


def test_quoted_history_already_seen_in_the_thread_is_kept_for_display_but_not_scored_again():
    question = "Is the fund guaranteed to return 8% every year?\nMy wife asks too."
    first, reply = store(
        mail(question, message_id="<q@client.example>").as_bytes(),
        mail(
            "No: nothing is guaranteed.",
            message_id="<r@bank.example>",
            in_reply_to="<q@client.example>",
            references=["<q@client.example>"],
            quoted=question,
        ).as_bytes(),
    )

    plan = scoring_plan(message_ids=[first.pk, reply.pk], bodies=[first.body, reply.body])

    assert plan.parts[0] is None  # nothing to add to the first message
    assert [s.kind for s in plan.shown[1]][-1] == SEEN
    assert all(s.kind != SEEN for s in plan.parts[1]) and plan.parts[1][-1].kind != "quoted"
    assert plan.seen[1][0]["message_id"] == first.pk


def test_the_pipeline_stores_history_already_seen_as_a_seen_part_and_does_not_score_it_again(
    tiny_model_version, settings
):
    settings.QA_SAMPLE_RATE = 0.0
    question = "Is the fund guaranteed to return 8% every year?\nMy wife asks too."
    first, reply = store(
        mail(question, message_id="<q2@client.example>").as_bytes(),
        mail(
            "No: nothing is guaranteed.",
            message_id="<r2@bank.example>",
            in_reply_to="<q2@client.example>",
            references=["<q2@client.example>"],
            quoted=question,
        ).as_bytes(),
    )

    # when both are scored by the real pipeline, in one batch
    messages_score_batch(message_ids=[first.pk, reply.pk])

    # then the reply's prediction shows the quoted question as already seen, names where it was
    # seen, and none of its windows read it
    prediction = Prediction.objects.get(message=reply)
    seen = [p for p in prediction.segments if p["kind"] == SEEN]
    assert len(seen) == 1 and not seen[0]["routes"]
    assert "Is the fund guaranteed" in reply.body[seen[0]["start"] : seen[0]["end"]]
    assert prediction.context["seen_quoted"] == [
        {"start": seen[0]["start"], "end": seen[0]["end"], "message_id": first.pk}
    ]
    assert prediction.window_scores and all(w["end"] <= seen[0]["start"] for w in prediction.window_scores)
    assert "seen_quoted" not in Prediction.objects.get(message=first).context


def test_a_text_attachment_is_a_part_of_its_own():
    (message,) = store(
        mail(
            "See the terms.", attachments=(AttachmentSpec("terms.txt", "text/plain", b"Zero risk."),)
        ).as_bytes()
    )

    plan = scoring_plan(message_ids=[message.pk], bodies=[message.body])

    attachment = plan.parts[0][-1]
    assert attachment.kind == ATTACHMENT and "Zero risk." in message.body[attachment.start : attachment.end]


def test_a_claim_split_over_two_chat_lines_routes_the_line_that_completes_it(
    tiny_model_version, tmp_path, settings
):
    from scoring.classifier.loading import get_scorer

    settings.SCORING_PRECISION = "float32"  # the scores measured here are the pipeline's to the digit
    settings.QA_SAMPLE_RATE = 0.0  # the opening line must be cleared, not drawn for QA
    settings.IG_N_STEPS = 16
    # given two lines that only make a claim together: measured on the tiny model (a toy that
    # keys on a few words and scores most halves of a claim near its whole: the gap is small but
    # exact in float32), the split of its training claims that gains most from being read whole,
    # and a threshold between the halves alone and the two together
    splits = [
        ("This investment is", "completely risk-free."),
        ("Your returns are", "guaranteed at 12 percent every year."),
        ("Your returns", "are guaranteed at 12 percent every year."),
        ("We guarantee a", "15% annual return on this fund."),
        ("Profits of 20% are", "certain with our plan."),
        ("Profits of 20%", "are certain with our plan."),
        ("The SEC", "approved this fund for all investors."),
        ("The SEC approved", "this fund for all investors."),
        ("There is zero", "risk to your capital with this product."),
        ("Your principal is totally", "safe, you cannot lose money."),
        ("Expect the shares", "to rise 30% before the summer."),
        ("This product is", "endorsed by the FCA."),
        ("Regulators have", "backed this investment."),
        ("The fund will", "gain 15 percent next quarter."),
        ("A risk-free way", "to grow your savings by 9%."),
        ("This stock will", "double by March."),
    ]
    texts = [t for a, b in splits for t in (a, b, f"{a}\n{b}")]
    scores = get_scorer(tiny_model_version).claim_scores(texts)
    gaps = [(scores[3 * i + 2] - max(scores[3 * i], scores[3 * i + 1]), i) for i in range(len(splits))]
    gap, best = max(gaps)
    first, second = splits[best]
    alone, together = max(scores[3 * best], scores[3 * best + 1]), scores[3 * best + 2]
    assert gap > 0.0005, [(splits[i], scores[3 * i : 3 * i + 3]) for i in range(len(splits))]
    tiny_model_version.threshold = (together + alone) / 2
    tiny_model_version.save()
    rows = [
        {"conversation_id": "desk", "sender": "Sam", "sent_at": "2025-03-03T10:00:00Z", "text": first},
        {"conversation_id": "desk", "sender": "Ann", "sent_at": "2025-03-03T10:00:10Z", "text": "ok?"},
        {"conversation_id": "desk", "sender": "Sam", "sent_at": "2025-03-03T10:00:20Z", "text": second},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    call_command("import_messages", str(path))
    lines = {m.body: m for m in Message.objects.all()}

    # when the batch is scored by the real pipeline
    outcome = messages_score_batch(message_ids=[m.pk for m in lines.values()])

    # then only the completing line is flagged, with the window that drove its score stored
    assert outcome.to_explain == [lines[second].pk]
    completing = Prediction.objects.get(message=lines[second])
    assert completing.flagged and completing.score == pytest.approx(together, abs=1e-4)
    assert completing.context["lines"]["drove"] is True
    assert completing.context["lines"]["message_ids"] == [lines[first].pk]  # Ann's line is not Sam's
    assert completing.context["lines"]["text"] == f"{first}\n{second}"
    opening = Prediction.objects.get(message=lines[first])
    assert not opening.flagged and opening.context == {}

    # when the scoring step hands its flagged lines over to the explanation step
    explained = messages_explain_batch(message_ids=outcome.to_explain)

    # then the completing line waits in the review queue with the context that drove its score,
    # and the opening line of the split claim is routed nowhere
    assert explained["explained"] == 1, explained
    routed = Message.objects.select_related("routing_prediction").get(pk=lines[second].pk)
    assert routed.status == MessageStatus.IN_REVIEW and routed.route_reason in (
        "model_flag",
        "model_and_rule",
    )
    assert routed.routing_prediction.context["lines"]["message_ids"] == [lines[first].pk]
    assert Explanation.objects.filter(message=routed, prediction=routed.routing_prediction).exists()
    assert list(queue_messages().values_list("pk", flat=True)) == [routed.pk]
    left = Message.objects.get(pk=lines[first].pk)
    assert left.status == MessageStatus.CLEARED and left.route_reason == "cleared"
    assert not Explanation.objects.filter(message=left).exists()
