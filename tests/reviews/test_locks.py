import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.test import override_settings
from django.utils import timezone

from core.roles import Role
from reviews.errors import LockHeldByOther, LockNotHeld, NotPermitted
from reviews.models import ReviewLock
from reviews.services import lock_claim, lock_claim_next, lock_release
from tests.factories import ReviewDecisionFactory, UserFactory, reviewable_message

pytestmark = pytest.mark.django_db


def test_review_next_claims_the_highest_score_first(reviewer):
    reviewable_message(score=0.6)
    top = reviewable_message(score=0.97)
    reviewable_message(score=0.8)
    assert lock_claim_next(reviewer=reviewer) == top


def test_review_next_takes_the_older_message_when_scores_tie(reviewer):
    now = timezone.now()
    reviewable_message(score=0.9, received_at=now - timedelta(hours=1))
    older = reviewable_message(score=0.9, received_at=now - timedelta(hours=5))
    assert lock_claim_next(reviewer=reviewer) == older


def test_two_reviewers_get_different_messages(reviewer, second_reviewer):
    reviewable_message(score=0.9)
    reviewable_message(score=0.8)
    first = lock_claim_next(reviewer=reviewer)
    second = lock_claim_next(reviewer=second_reviewer)
    assert first is not None and second is not None
    assert first != second


def test_a_reviewer_holding_a_live_lock_gets_the_same_message_again(reviewer):
    reviewable_message(score=0.9)
    reviewable_message(score=0.8)
    first = lock_claim_next(reviewer=reviewer)
    assert lock_claim_next(reviewer=reviewer) == first
    assert ReviewLock.objects.filter(reviewer=reviewer).count() == 1


def test_nothing_is_claimed_when_every_message_is_taken(reviewer, second_reviewer):
    reviewable_message()
    lock_claim_next(reviewer=reviewer)
    assert lock_claim_next(reviewer=second_reviewer) is None


@override_settings(REVIEW_LOCK_MINUTES=10)
def test_the_lock_lasts_the_configured_minutes(reviewer):
    reviewable_message()
    before = timezone.now()
    message = lock_claim_next(reviewer=reviewer)
    lock = ReviewLock.objects.get(message=message)
    assert timedelta(minutes=9, seconds=59) < lock.expires_at - before <= timedelta(minutes=10, seconds=1)


def test_an_expired_lock_frees_the_message_for_another_reviewer(reviewer, second_reviewer):
    message = reviewable_message()
    lock_claim_next(reviewer=reviewer)
    ReviewLock.objects.filter(message=message).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert lock_claim_next(reviewer=second_reviewer) == message
    assert ReviewLock.objects.get(message=message).reviewer == second_reviewer


def test_a_decision_releases_the_lock_and_the_message_leaves_the_queue(reviewer, second_reviewer):
    message = reviewable_message()
    lock_claim_next(reviewer=reviewer)
    ReviewDecisionFactory(message=message, reviewer=reviewer, verdict="no_claim")
    assert not ReviewLock.objects.filter(message=message).exists()
    assert lock_claim_next(reviewer=second_reviewer) is None


def test_only_messages_in_review_are_claimed(reviewer):
    reviewable_message(status="decided")
    reviewable_message(status="escalated")
    assert lock_claim_next(reviewer=reviewer) is None


def test_claiming_a_particular_message_replaces_the_reviewers_other_lock(reviewer):
    first, second = reviewable_message(score=0.9), reviewable_message(score=0.5)
    lock_claim_next(reviewer=reviewer)
    lock_claim(reviewer=reviewer, message=second)
    assert list(ReviewLock.objects.filter(reviewer=reviewer).values_list("message", flat=True)) == [second.pk]
    assert not ReviewLock.objects.filter(message=first).exists()


def test_a_message_claimed_by_someone_else_cannot_be_taken(reviewer, second_reviewer):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    with pytest.raises(LockHeldByOther, match="rita_reviewer"):
        lock_claim(reviewer=second_reviewer, message=message)


def test_releasing_gives_the_message_back(reviewer, second_reviewer):
    message = reviewable_message()
    lock_claim(reviewer=reviewer, message=message)
    lock_release(reviewer=reviewer, message=message)
    assert lock_claim_next(reviewer=second_reviewer) == message


def test_releasing_a_message_you_do_not_hold_is_refused(reviewer):
    with pytest.raises(LockNotHeld):
        lock_release(reviewer=reviewer, message=reviewable_message())


@pytest.mark.parametrize("role", [Role.AUDITOR, Role.COMPLIANCE_ADMIN, Role.INGEST_SERVICE, None])
def test_only_reviewers_can_claim(role):
    reviewable_message()
    with pytest.raises(NotPermitted):
        lock_claim_next(reviewer=UserFactory(role=role))


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_review_next_never_hands_out_the_same_message_twice(committed_decisions):
    """Real threads, real connections, on every database: on PostgreSQL FOR UPDATE SKIP LOCKED
    plus the unique lock row decide the race; on SQLite (a file, as in `make run`) the IMMEDIATE
    transactions serialise the claims."""
    reviewers = [UserFactory(username=f"concurrent{i}", role=Role.REVIEWER) for i in range(8)]
    for i in range(12):
        reviewable_message(score=0.5 + i / 100)
    barrier = threading.Barrier(len(reviewers))
    results: dict[str, int | None] = {}
    errors: list[BaseException] = []

    def claim(user):
        try:
            barrier.wait()
            message = lock_claim_next(reviewer=user)
            results[user.username] = message.pk if message else None
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claim, args=(user,)) for user in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    claimed = [pk for pk in results.values() if pk is not None]
    assert len(claimed) == len(reviewers)
    assert len(set(claimed)) == len(claimed)
    assert ReviewLock.objects.count() == len(reviewers)
