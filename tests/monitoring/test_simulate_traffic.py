"""simulate_traffic: its options, --days-ago, the demo through the importers, the simulated
blind second reviews, on the tiny model. Its small run with the real trained classifier (the
whole pipeline runs: ingest, scoring, explanations, simulated reviews; the drift it injects shows
up in the monitoring as a rise in the drifted claim type's disagreement after the drift day and
an alert) is the first phase of tests/monitoring/test_closing_the_loop.py. (The drift is
leetspeak in Cyrillic look-alike letters: the real model misses most of it, as drift should; it
reads plain leetspeak, which is why the look-alikes.)
IG runs with 4 steps here: the explanations are computed for real, only coarser."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from reviews.models import ReviewDecision
from reviews.selectors import audit_chain_report
from scoring.models import Message

pytest.importorskip("explanations.services", reason="the explanation service is not merged yet")

pytestmark = pytest.mark.django_db

SMALL = {
    "days": 8,
    "drift_day": 4,
    "per_day": 40,
    "drift_per_day": 30,
    "drift_types": "risk_free",
    "claim_rate": 0.3,
    "qa_rate": 1.0,
    "error_rate": 0.0,
    "reviewers": 2,
    "seed": 3,
}


def run(**options) -> dict:
    out = StringIO()
    call_command("simulate_traffic", json=True, stdout=out, stderr=StringIO(), **options)
    return json.loads(out.getvalue())


# The small run with the real trained classifier (SMALL, seed 3: the drift shows up as a rise and an
# alert, the audit chain holds) is the first phase of the closing-the-loop story, with the same
# configuration and seed: it runs, with all of its assertions, once, in
# tests/monitoring/test_closing_the_loop.py.


def test_without_an_active_model_nothing_is_simulated():
    with pytest.raises(CommandError, match="No model version is active"):
        run(days=3, drift_day=1, per_day=2)
    assert Message.objects.count() == 0


def test_bad_options_are_refused_before_anything_is_written(tiny_model_version):
    with pytest.raises(CommandError, match="--drift-day must be within"):
        run(days=5, drift_day=9)
    with pytest.raises(CommandError, match="--drift-types"):
        run(days=5, drift_day=2, drift_types="not_a_type")
    with pytest.raises(CommandError, match="--qa-rate"):
        run(days=5, drift_day=2, qa_rate=1.5)
    assert Message.objects.count() == 0


def test_if_empty_leaves_a_database_with_messages_alone(tiny_model_version):
    from tests.factories import MessageFactory

    MessageFactory()
    out = StringIO()
    call_command("simulate_traffic", demo=True, if_empty=True, stdout=out, stderr=StringIO())

    assert "already holds 1 messages" in out.getvalue()
    assert Message.objects.count() == 1


def test_days_ago_must_not_be_negative(tiny_model_version):
    with pytest.raises(CommandError, match="--days-ago"):
        run(days=3, drift_day=1, per_day=2, days_ago=-1)
    assert Message.objects.count() == 0


def test_days_ago_ends_the_simulated_days_that_many_days_earlier(tiny_model_version):
    from datetime import timedelta

    from django.utils import timezone

    report = run(days=2, drift_day=1, per_day=2, drift_per_day=1, days_ago=5)

    yesterday = timezone.now().date() - timedelta(days=1)
    assert report["last_day"] == (yesterday - timedelta(days=5)).isoformat()
    latest = Message.objects.order_by("-received_at").first().received_at.date()
    assert latest <= yesterday - timedelta(days=5)


def test_the_demo_arrives_through_the_importers_and_leaves_its_last_day_in_the_queue(
    tiny_model_version, settings, tmp_path
):
    from reviews.models import ReviewDecision
    from scoring.constants import MessageStatus
    from scoring.models import Conversation

    settings.VAR_DIR = tmp_path
    settings.IG_N_STEPS = 4

    report = run(demo=True, days=2, drift_day=1, per_day=12, drift_per_day=2, qa_rate=1.0, reviewers=1)

    run_folder = next((tmp_path / "demo").iterdir())
    assert sorted(p.name for p in next(run_folder.iterdir()).iterdir()) == [
        "journal.mbox",
        "slack-export",
        "sms.jsonl",
    ]
    messages = list(Message.objects.select_related("conversation"))
    assert report["messages"] == len(messages)
    emails = [m for m in messages if m.channel == "email"]
    assert emails and all(m.subject and m.headers.get("message_id") for m in emails)
    assert all(m.conversation is not None for m in messages if m.channel in ("email", "chat"))
    assert Conversation.objects.filter(kind=Conversation.Kind.CHAT).exists()
    last_day = report["last_day"]
    routed_last = [
        m for m in messages if m.received_at.date().isoformat() == last_day and m.route_reason != "cleared"
    ]
    assert routed_last and all(m.status == MessageStatus.IN_REVIEW for m in routed_last)
    assert report["left_in_queue"] >= len(routed_last)
    decided = ReviewDecision.objects.values_list("message__received_at", flat=True)
    assert decided and all(at.date().isoformat() < last_day for at in decided)


def test_simulated_reviewers_take_the_blind_second_reviews_and_the_chain_holds(tiny_model_version, settings):
    from reviews.models import DoubleReview

    settings.DOUBLE_REVIEW_RATE = 1.0
    settings.IG_N_STEPS = 4

    report = run(days=2, drift_day=2, per_day=4, qa_rate=1.0, error_rate=0.0, reviewers=2, days_ago=3, seed=5)

    reviews = list(DoubleReview.objects.select_related("first_decision", "second_decision"))
    assert report["second_reviews"] == len(reviews) > 0
    assert all(r.second_decision is not None for r in reviews)
    assert all(r.first_decision.reviewer_id != r.second_decision.reviewer_id for r in reviews)
    assert report["decided"] == ReviewDecision.objects.count()
    assert audit_chain_report().intact
