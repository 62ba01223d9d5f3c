"""The daily roll-up stays equal to the base tables: whole days are recomputed when any of their
messages changed, late work on an old day lands in that day, and nothing changed means nothing
recomputed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from monitoring.models import MessageDayRollup
from monitoring.services import rollup_refresh
from scoring.constants import MessageStatus
from scoring.models import Message
from tests.monitoring.conftest import day_at, explained, routed

pytestmark = pytest.mark.django_db


def totals(version) -> dict:
    return {
        (row.day, row.route_reason): row.messages
        for row in MessageDayRollup.objects.filter(model_version=version)
    }


def test_the_first_refresh_rolls_up_every_day_and_splits_routes_and_types(version, base_day):
    routed(version, received_at=day_at(base_day, 1), score=0.9, claim_code="risk_free")
    routed(version, received_at=day_at(base_day, 2), score=0.9, claim_code="guaranteed_returns")
    routed(version, received_at=day_at(base_day, 3), score=0.1, route="cleared", status=MessageStatus.CLEARED)
    routed(version, received_at=day_at(base_day + timedelta(days=2), 3), score=0.2, rule_code="risk_free")

    result = rollup_refresh()

    assert result.full and result.days == 3  # the day between, with no message, is recomputed too
    rows = MessageDayRollup.objects.filter(model_version=version, day=base_day)
    assert sorted(
        (r.route_reason, r.predicted_claim_type.code if r.predicted_claim_type else None, r.messages)
        for r in rows
    ) == [
        ("cleared", None, 1),
        ("model_flag", "guaranteed_returns", 1),
        ("model_flag", "risk_free", 1),
    ]
    rule_row = MessageDayRollup.objects.get(model_version=version, day=base_day + timedelta(days=2))
    assert (rule_row.route_reason, rule_row.rule_hits) == ("rule_hit", {"risk_free": 1})
    assert sum(rule_row.score_histogram) == 1


def test_a_late_change_to_an_old_day_is_picked_up_and_other_days_are_left_alone(version, base_day):
    # given a refresh whose watermark (now - skew) is after every write so far
    start = timezone.now()
    old = routed(version, received_at=day_at(base_day, 9), score=0.9)
    routed(version, received_at=day_at(base_day + timedelta(days=5), 9), score=0.9)
    rollup_refresh(now=start + timedelta(minutes=2))
    untouched = MessageDayRollup.objects.get(day=base_day + timedelta(days=5)).pk

    # when a late message for the old day arrives and the old message is explained, afterwards
    late = routed(version, received_at=day_at(base_day, 10), score=0.9)
    explained(old)
    Message.objects.filter(pk__in=[late.pk, old.pk]).update(updated_at=start + timedelta(minutes=3))
    result = rollup_refresh(now=start + timedelta(minutes=5))

    # then only that day is recomputed, and it holds both changes
    assert result.days == 1 and not result.full
    row = MessageDayRollup.objects.get(day=base_day)
    assert row.messages == 2
    assert row.explanations["integrated_gradients"]["computed"] == 1
    assert MessageDayRollup.objects.get(day=base_day + timedelta(days=5)).pk == untouched


def test_nothing_changed_means_nothing_recomputed(version, base_day):
    routed(version, received_at=day_at(base_day, 9), score=0.9)
    rollup_refresh(now=timezone.now() + timedelta(minutes=10))

    result = rollup_refresh(now=timezone.now() + timedelta(minutes=20))

    assert (result.days, result.rows, result.full) == (0, 0, False)
    assert MessageDayRollup.objects.count() == 1


def test_a_message_waiting_for_scoring_is_not_rolled_up_until_it_is_scored(version, base_day):
    from tests.factories import MessageFactory

    waiting = MessageFactory(received_at=day_at(base_day, 9), status=MessageStatus.QUEUED)
    rollup_refresh()
    assert MessageDayRollup.objects.count() == 0
    waiting.delete()
    routed(version, received_at=day_at(base_day, 9), score=0.9)
    rollup_refresh()
    assert totals(version) == {(base_day, "model_flag"): 1}


# --- The decision roll-up ----------------------------------------------------------------------------


def live_counts() -> dict:
    """The effective decisions counted straight from the decision table."""
    from collections import Counter
    from datetime import UTC

    from monitoring.selectors import effective_decisions

    counts = Counter()
    for row in effective_decisions().values(
        "created_at",
        "model_version_id",
        "model_flagged",
        "is_qa_sample",
        "verdict",
        "claim_type_id",
        "model_claim_type_id",
    ):
        day = row.pop("created_at").astimezone(UTC).date()
        counts[(day, *row.values())] += 1
    return dict(counts)


def rolled_up_counts() -> dict:
    from monitoring.models import DecisionDayRollup

    return {
        (
            r.day,
            r.model_version_id,
            r.model_flagged,
            r.is_qa_sample,
            r.verdict,
            r.claim_type_id,
            r.model_claim_type_id,
        ): r.decisions
        for r in DecisionDayRollup.objects.all()
        if r.decisions
    }


def test_the_decision_rollup_follows_corrections_and_escalations_incrementally(version, base_day, admin_user):
    from tests.factories import ReviewDecisionFactory, claim_type
    from tests.monitoring.conftest import decide

    at = day_at(base_day, 9)
    first = routed(version, received_at=at, score=0.9)
    wrong = decide(first, verdict="claim", claim_code="guaranteed_returns", at=at)
    escalated = routed(version, received_at=at, score=0.2, claim_code="risk_free")
    decide(escalated, verdict="escalate", at=at + timedelta(hours=1))
    qa = routed(version, received_at=at, score=0.1)
    decide(qa, verdict="claim", claim_code="risk_free", at=at + timedelta(hours=2))
    rollup_refresh()
    assert rolled_up_counts() == live_counts()
    assert sum(rolled_up_counts().values()) == 2  # the escalation does not count yet

    # a correction three days later takes the first decision's count away from its day
    first.refresh_from_db()
    ReviewDecisionFactory(
        message=first,
        reviewer=admin_user,
        verdict="no_claim",
        claim_type=None,
        supersedes=wrong,
        supersede_reason="it was a delivery promise",
        decided_at=day_at(base_day + timedelta(days=3), 9),
    )
    escalated.refresh_from_db()
    ReviewDecisionFactory(
        message=escalated,
        reviewer=admin_user,
        verdict="claim",
        claim_type=claim_type("risk_free"),
        decided_at=day_at(base_day + timedelta(days=3), 10),
    )
    result = rollup_refresh()

    assert result.decisions == 2
    assert rolled_up_counts() == live_counts()
    assert {key[0] for key in rolled_up_counts()} == {base_day, base_day + timedelta(days=3)}
    # and a rebuild from scratch gives the same rows
    rollup_refresh(full=True)
    assert rolled_up_counts() == live_counts()


def test_a_double_reviewed_message_counts_once_and_the_admins_final_decision_replaces_the_first(
    version, base_day, admin_user, second_reviewer, settings
):
    from reviews.services import decision_record, lock_claim
    from tests.factories import claim_type
    from tests.monitoring.conftest import decide

    settings.DOUBLE_REVIEW_RATE = 1.0
    at = day_at(base_day, 9)
    message = routed(version, received_at=at, score=0.9)
    decide(message, verdict="claim", claim_code="guaranteed_returns", at=at)
    rollup_refresh()
    assert sum(rolled_up_counts().values()) == 1

    # the blind second review disagrees, and the compliance admin decides two days later
    message.refresh_from_db()
    lock_claim(reviewer=second_reviewer, message=message)
    decision_record(
        message=message, reviewer=second_reviewer, verdict="no_claim", decided_at=at + timedelta(hours=2)
    )
    rollup_refresh()
    assert rolled_up_counts() == live_counts() and sum(rolled_up_counts().values()) == 1
    message.refresh_from_db()
    decision_record(
        message=message,
        reviewer=admin_user,
        verdict="claim",
        claim_type=claim_type("risk_free"),
        decided_at=day_at(base_day + timedelta(days=2), 9),
    )
    rollup_refresh()

    assert rolled_up_counts() == live_counts()
    assert list(rolled_up_counts()) == [
        (
            base_day + timedelta(days=2),
            version.pk,
            True,
            False,
            "claim",
            claim_type("risk_free").pk,
            claim_type("guaranteed_returns").pk,
        )
    ]
    rollup_refresh(full=True)
    assert rolled_up_counts() == live_counts()


def test_the_periodic_task_refreshes_the_rollups_and_is_scheduled(version, base_day, settings):
    from monitoring.tasks import refresh_rollups

    routed(version, received_at=day_at(base_day, 9), score=0.9)
    assert refresh_rollups.apply().get() == {"days": 1, "rows": 1, "decisions": 0}
    assert MessageDayRollup.objects.count() == 1
    assert settings.CELERY_BEAT_SCHEDULE["refresh-monitoring"]["task"] == refresh_rollups.name


def test_a_full_refresh_looks_for_a_missing_corpus_again(version, base_day):
    from monitoring.models import LengthReference

    routed(version, received_at=day_at(base_day, 9), score=0.9)
    rollup_refresh()
    missing = LengthReference.objects.get(corpus_sha256=version.corpus_sha256)
    assert missing.available is False

    rollup_refresh(full=True)

    again = LengthReference.objects.get(corpus_sha256=version.corpus_sha256)
    assert again.pk != missing.pk and again.available is False
