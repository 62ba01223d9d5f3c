"""The Reviewers page (issue 19): agreement per reviewer and claim type from blind double reviews,
kappa over time with the disagreement alert, small samples shown as small."""

from __future__ import annotations

import re
import statistics
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from monitoring.agreement import cohen_kappa
from monitoring.selectors.reviewers import ALL_REVIEWERS, kappa_timeline, reviewers_report
from reviews.models import DecisionTiming, DoubleReview
from reviews.services import decision_record, lock_claim
from tests.factories import claim_type, reviewable_message
from tests.reviews.conftest import signed_in

pytestmark = pytest.mark.django_db


def decide(message, reviewer, label):
    if message.status == "in_review":
        lock_claim(reviewer=reviewer, message=message)
    verdict = "no_claim" if label == "no_claim" else "claim"
    return decision_record(
        message=message,
        reviewer=reviewer,
        verdict=verdict,
        claim_type=claim_type(label) if verdict == "claim" else None,
    )


def pair(first_reviewer, second_reviewer, first, second, *, claim_code="guaranteed_returns"):
    """A message reviewed twice, blind: `first` by one reviewer, `second` by the other."""
    message = reviewable_message(claim_code=claim_code)
    decide(message, first_reviewer, first)
    message.refresh_from_db()
    assert message.status == "in_review"  # drawn (DOUBLE_REVIEW_RATE = 1)
    decide(message, second_reviewer, second)
    message.refresh_from_db()
    return message


@pytest.fixture
def pairs(settings, reviewer, second_reviewer, admin_user):
    """Six pairs between rita and rob: four agree, one disagrees on the type and one on the
    verdict; the admin decides both disagreements."""
    settings.DOUBLE_REVIEW_RATE = 1.0
    table = [
        ("guaranteed_returns", "guaranteed_returns"),
        ("guaranteed_returns", "guaranteed_returns"),
        ("no_claim", "no_claim"),
        ("risk_free", "risk_free"),
        ("guaranteed_returns", "risk_free"),
        ("guaranteed_returns", "no_claim"),
    ]
    messages = [pair(reviewer, second_reviewer, a, b) for a, b in table]
    for message in messages[4:]:
        assert message.status == "escalated"
        decide(message, admin_user, "guaranteed_returns")
    return table


def row(report, reviewer, code="all"):
    return next(r for r in report.rows if r.reviewer == reviewer and r.claim_type == code)


def test_each_reviewers_agreement_kappa_and_agreement_with_final_decisions(pairs):
    report = reviewers_report(days=30, period="week")

    rita = row(report, "rita_reviewer")
    assert rita.decisions == 6 and (rita.double_reviewed.successes, rita.double_reviewed.n) == (6, 6)
    assert (rita.agreement.successes, rita.agreement.n) == (4, 6)
    assert rita.kappa.kappa == pytest.approx(cohen_kappa(pairs).kappa)
    assert rita.kappa.small  # 6 pairs
    assert (rita.final_agreement.successes, rita.final_agreement.n) == (2, 2)  # rita said what the admin did
    rob = row(report, "rob_reviewer")
    assert (rob.final_agreement.successes, rob.final_agreement.n) == (0, 2)
    assert rob.kappa.kappa == pytest.approx(cohen_kappa([(b, a) for a, b in pairs]).kappa)
    assert rita.median_seconds is not None and rita.timed == 6
    everyone = row(report, ALL_REVIEWERS)
    assert everyone.decisions == 12  # the admin's final decisions are not a reviewer's
    # a pair counts under the type it was drawn for: rita's claim type, else the model's (flagged
    # guaranteed_returns, for her "not a claim")
    assert row(report, "rita_reviewer", "risk_free").agreement.n == 1
    assert row(report, "rita_reviewer", "guaranteed_returns").agreement.n == 5
    assert report.pending == 0 and report.awaiting_admin == 0


def test_the_median_time_to_decide_is_the_median_of_the_recorded_timings(pairs, admin_user):
    # given explicit timings (those recorded live depend on the clock), in decision order:
    # rita decided gr, gr, no_claim (about the model's gr), rf, gr, gr; rob the second of each pair
    chosen = {"rita_reviewer": [4, 8, 30, 12, 300, 10], "rob_reviewer": [20, 40, 60, 80, 100, 120]}
    for username, seconds in chosen.items():
        timings = DecisionTiming.objects.filter(decision__reviewer__username=username).order_by(
            "decision__created_at", "decision_id"
        )
        assert timings.count() == len(seconds)
        for timing, value in zip(list(timings), seconds, strict=True):
            DecisionTiming.objects.filter(pk=timing.pk).update(seconds=value)
    DecisionTiming.objects.filter(decision__reviewer=admin_user).update(seconds=1000)
    admin_timed = DecisionTiming.objects.filter(decision__reviewer=admin_user).count()

    # when
    report = reviewers_report(days=30, period="week")

    # then
    assert (row(report, "rita_reviewer").median_seconds, row(report, "rita_reviewer").timed) == (11.0, 6)
    assert row(report, "rob_reviewer").median_seconds == 70.0
    assert row(report, "rita_reviewer", "guaranteed_returns").median_seconds == 10.0  # 4, 8, 10, 30, 300
    assert row(report, "rita_reviewer", "risk_free").median_seconds == 12.0
    everyone = row(report, ALL_REVIEWERS)
    every_timing = [*chosen["rita_reviewer"], *chosen["rob_reviewer"], *[1000] * admin_timed]
    assert (everyone.median_seconds, everyone.timed) == (statistics.median(every_timing), len(every_timing))
    html = signed_in(admin_user).get(reverse("monitoring:reviewers"), {"days": 30}).content.decode()
    assert "11 s (n = 6)" in html and "70 s (n = 6)" in html


def test_the_page_shows_every_figure_with_its_size_and_never_a_bare_number(pairs, admin_user):
    response = signed_in(admin_user).get(reverse("monitoring:reviewers"), {"days": 30})

    assert response.status_code == 200
    html = response.content.decode()
    assert "rob_reviewer" in html and "rita_reviewer" in html
    assert "4 of 6: 67 % [30-90 %], n too small" in html  # percent agreement, Wilson
    assert ", n = 6, n too small</td>" in html  # kappa with its interval and n
    assert "Fleiss, Cohen and" in html and "alert fires for a period" in html
    assert 'id="reviewers-config"' in html


def test_a_reviewer_cannot_open_the_reviewers_page(reviewer):
    assert signed_in(reviewer).get(reverse("monitoring:reviewers")).status_code == 403


def test_a_bad_window_is_refused_with_the_reason(admin_user):
    response = signed_in(admin_user).get(reverse("monitoring:reviewers"), {"days": "0"})
    assert response.status_code == 400 and "days" in response.content.decode()


def test_a_refused_window_keeps_the_pages_introduction_whole(admin_user, settings):
    settings.DOUBLE_REVIEW_RATE = 0.1
    client = signed_in(admin_user)

    def introduction(response) -> str:
        return re.search(r'<p class="help">How consistently.*?</p>', response.content.decode(), re.S).group(0)

    refused = client.get(reverse("monitoring:reviewers"), {"days": "0"})
    shown = client.get(reverse("monitoring:reviewers"), {"days": "30"})

    assert refused.status_code == 400 and shown.status_code == 200
    assert "(10 % of the decisions of each claim type" in introduction(refused)
    assert introduction(refused) == introduction(shown)


def test_the_page_makes_the_same_number_of_queries_for_few_or_many_pairs(
    settings, reviewer, second_reviewer, admin_user
):
    settings.DOUBLE_REVIEW_RATE = 1.0
    client = signed_in(admin_user)
    pair(reviewer, second_reviewer, "no_claim", "no_claim")
    client.get(reverse("monitoring:reviewers"))  # warm the session and the role cache
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("monitoring:reviewers"))
    for _ in range(4):
        pair(reviewer, second_reviewer, "risk_free", "no_claim", claim_code="risk_free")
    with CaptureQueriesContext(connection) as many:
        client.get(reverse("monitoring:reviewers"))
    assert len(many) == len(few)


def test_the_alert_fires_when_the_reviewers_disagree_more_than_before():
    from monitoring.selectors.reviewers import Pair

    now = timezone.now()
    earlier = [
        Pair("a", "b", "no_claim", "no_claim", "all", None, now - timedelta(days=14)) for _ in range(20)
    ]
    later = [Pair("a", "b", "no_claim", "risk_free", "all", None, now) for _ in range(8)]

    timeline = kappa_timeline(
        earlier + later, period="week", since=(now - timedelta(days=20)).date(), until=now.date()
    )

    fired = [p for p in timeline if p["alert"]]
    assert len(fired) == 1 and fired[0]["n"] == 8 and fired[0]["reference"]["n"] == 20
    assert not DoubleReview.objects.exists()
