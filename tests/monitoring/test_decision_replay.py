"""decision_record's replay keyword (`decided_at`, used only by simulate_traffic): the record is
stamped with the replayed time, the chain stays in time order and intact, and a replay into the
future or before the chain's newest record is refused without writing anything."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reviews.checkpoints import audit_checkpoint_write
from reviews.errors import DecisionInvalid
from reviews.models import ReviewDecision
from reviews.selectors import audit_chain_report
from reviews.services import decision_record, lock_claim
from tests.factories import reviewable_message

pytestmark = pytest.mark.django_db


def claimed(reviewer):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    return message


def test_a_replayed_decision_is_stamped_with_its_time_and_keeps_the_chain_intact(reviewer):
    earlier = timezone.now() - timedelta(days=3)
    first = decision_record(
        message=claimed(reviewer), reviewer=reviewer, verdict="no_claim", decided_at=earlier
    )
    second = decision_record(
        message=claimed(reviewer),
        reviewer=reviewer,
        verdict="no_claim",
        decided_at=earlier + timedelta(hours=1),
    )
    assert (first.created_at, second.created_at) == (earlier, earlier + timedelta(hours=1))
    assert audit_chain_report().chain.intact
    # replayed history is older than any checkpoint could be: simulate_traffic signs it when it ends
    audit_checkpoint_write()
    assert audit_chain_report().intact


@pytest.mark.parametrize(
    ("when", "words"),
    [
        (lambda now: now + timedelta(minutes=5), "in the future"),
        (lambda now: now - timedelta(days=10), "cannot precede"),
        (lambda now: (now - timedelta(hours=1)).replace(tzinfo=None), "time zone"),
    ],
)
def test_a_replay_out_of_order_or_in_the_future_is_refused_and_writes_nothing(reviewer, when, words):
    now = timezone.now()
    decision_record(
        message=claimed(reviewer), reviewer=reviewer, verdict="no_claim", decided_at=now - timedelta(days=2)
    )
    message = claimed(reviewer)
    with pytest.raises(DecisionInvalid, match=words):
        decision_record(message=message, reviewer=reviewer, verdict="no_claim", decided_at=when(now))
    assert ReviewDecision.objects.count() == 1
    message.refresh_from_db()
    assert message.status == "in_review"
