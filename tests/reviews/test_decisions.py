import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from core.roles import Role
from reviews.errors import AlreadyDecided, DecisionInvalid, LockNotHeld, NotPermitted
from reviews.hashing import GENESIS_HASH, record_hash
from reviews.models import ReviewDecision, ReviewLock
from reviews.selectors import audit_chain_report
from reviews.services import decision_record, lock_claim
from tests.factories import ReviewDecisionFactory, UserFactory, claim_type, reviewable_message

pytestmark = pytest.mark.django_db


def claimed(reviewer, **kwargs):
    message = reviewable_message(**kwargs)
    lock_claim(reviewer=reviewer, message=message)
    return message


def test_a_decision_stores_a_snapshot_of_what_it_judged(reviewer):
    message = claimed(reviewer, score=0.91)
    decision = decision_record(
        message=message, reviewer=reviewer, verdict="claim", claim_type=claim_type("guaranteed_returns")
    )
    snap = decision.snapshot
    prediction = message.routing_prediction
    assert snap["prediction"]["model_version"] == {
        "id": prediction.model_version_id,
        "name": prediction.model_version.name,
    }
    assert snap["prediction"]["score"] == 0.91
    assert snap["prediction"]["threshold"] == 0.5
    assert snap["prediction"]["claim_type"] == "guaranteed_returns"
    assert snap["rule_matches"][0]["text"] == "guaranteed returns"
    assert snap["rule_matches"][0]["rule_code"].startswith("GR-")
    assert snap["explanation"]["passed"] is True
    assert snap["explanation"]["id"] == message.explanations.get().pk
    assert snap["is_qa_sample"] is False
    assert decision.model_version_id == prediction.model_version_id
    assert decision.model_score == 0.91
    assert decision.model_threshold == 0.5
    assert decision.model_claim_type == claim_type("guaranteed_returns")


@pytest.mark.parametrize(
    ("score", "verdict", "code", "agrees", "type_matches"),
    [
        (0.9, "claim", "guaranteed_returns", True, True),
        (0.9, "claim", "risk_free", True, False),
        (0.9, "no_claim", None, False, None),
        (0.1, "claim", "risk_free", False, None),
        (0.1, "no_claim", None, True, None),
    ],
)
def test_agreement_with_the_model_compares_its_flag_with_the_verdict(
    reviewer, score, verdict, code, agrees, type_matches
):
    message = claimed(reviewer, score=score, qa_sample=score < 0.5)
    decision = decision_record(
        message=message, reviewer=reviewer, verdict=verdict, claim_type=claim_type(code) if code else None
    )
    assert decision.model_flagged is (score >= 0.5)
    assert decision.agrees_with_model is agrees
    assert decision.claim_type_matches is type_matches
    assert decision.is_qa_sample is (score < 0.5)


def test_an_escalation_has_no_agreement_and_moves_the_message_to_escalated(reviewer):
    message = claimed(reviewer)
    decision = decision_record(
        message=message, reviewer=reviewer, verdict="escalate", escalation_reason="unsure"
    )
    message.refresh_from_db()
    assert decision.agrees_with_model is None
    assert message.status == "escalated"
    assert message.escalated_at is not None


def test_a_decision_moves_the_message_to_decided_and_releases_the_lock(reviewer):
    message = claimed(reviewer)
    decision_record(message=message, reviewer=reviewer, verdict="no_claim")
    message.refresh_from_db()
    assert message.status == "decided"
    assert message.decided_at is not None
    assert not ReviewLock.objects.filter(message=message).exists()


def test_a_second_submission_is_refused_and_writes_nothing(reviewer):
    message = claimed(reviewer)
    decision_record(message=message, reviewer=reviewer, verdict="no_claim")
    with pytest.raises(AlreadyDecided, match="already been decided"):
        decision_record(message=message, reviewer=reviewer, verdict="no_claim")
    assert ReviewDecision.objects.filter(message=message).count() == 1


def test_a_reviewer_without_the_lock_cannot_decide(reviewer):
    message = reviewable_message()
    with pytest.raises(LockNotHeld):
        decision_record(message=message, reviewer=reviewer, verdict="no_claim")
    assert not ReviewDecision.objects.exists()


def test_a_reviewer_cannot_decide_a_message_another_reviewer_holds(reviewer, second_reviewer):
    message = claimed(second_reviewer)
    with pytest.raises(LockNotHeld):
        decision_record(message=message, reviewer=reviewer, verdict="no_claim")


def test_an_expired_lock_still_counts_while_nobody_else_has_claimed_the_message(reviewer):
    message = claimed(reviewer)
    ReviewLock.objects.filter(message=message).update(expires_at=timezone.now() - timedelta(minutes=1))
    decision = decision_record(message=message, reviewer=reviewer, verdict="no_claim")
    assert decision.sequence == 1


def test_once_another_reviewer_claims_an_expired_lock_the_first_cannot_decide(reviewer, second_reviewer):
    message = claimed(reviewer)
    ReviewLock.objects.filter(message=message).update(expires_at=timezone.now() - timedelta(minutes=1))
    lock_claim(reviewer=second_reviewer, message=message)
    with pytest.raises(LockNotHeld):
        decision_record(message=message, reviewer=reviewer, verdict="no_claim")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"verdict": "claim"}, "needs its claim type"),
        ({"verdict": "no_claim", "claim_type": "risk_free"}, "only with a claim verdict"),
        ({"verdict": "escalate"}, "needs a reason"),
        ({"verdict": "no_claim", "escalation_reason": "why"}, "only with an escalation"),
        ({"verdict": "maybe"}, "is not a verdict"),
        ({"verdict": "no_claim", "note": "x" * 5001}, "longer than"),
        ({"verdict": "no_claim", "supersede_reason": "oops"}, "needs the decision it corrects"),
    ],
)
def test_an_incomplete_or_contradictory_decision_is_refused_and_changes_nothing(reviewer, kwargs, error):
    message = claimed(reviewer)
    if "claim_type" in kwargs:
        kwargs["claim_type"] = claim_type(kwargs["claim_type"])
    with pytest.raises(DecisionInvalid, match=error):
        decision_record(message=message, reviewer=reviewer, **kwargs)
    message.refresh_from_db()
    assert message.status == "in_review"
    assert not ReviewDecision.objects.exists()
    assert ReviewLock.objects.filter(message=message, reviewer=reviewer).exists()


@pytest.mark.parametrize("role", [Role.AUDITOR, Role.INGEST_SERVICE, None])
def test_people_who_are_not_reviewers_cannot_decide(role):
    message = reviewable_message()
    with pytest.raises(NotPermitted):
        decision_record(message=message, reviewer=UserFactory(role=role), verdict="no_claim")


def test_a_compliance_admin_decides_an_escalation_at_the_second_level(reviewer, admin_user):
    escalation = ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    decision = decision_record(
        message=escalation.message, reviewer=admin_user, verdict="claim", claim_type=claim_type("risk_free")
    )
    escalation.message.refresh_from_db()
    assert decision.is_second_level is True
    assert escalation.message.status == "decided"
    assert decision.agrees_with_model is True


def test_a_reviewer_cannot_decide_an_escalated_message(reviewer):
    escalation = ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    with pytest.raises(NotPermitted, match="compliance admin"):
        decision_record(message=escalation.message, reviewer=reviewer, verdict="no_claim")


def test_an_escalation_cannot_be_escalated_again(reviewer, admin_user):
    escalation = ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    with pytest.raises(DecisionInvalid):
        decision_record(
            message=escalation.message, reviewer=admin_user, verdict="escalate", escalation_reason="x"
        )


def test_a_correction_supersedes_the_latest_decision_with_a_reason(reviewer, admin_user):
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    correction = decision_record(
        message=first.message,
        reviewer=admin_user,
        verdict="claim",
        claim_type=claim_type("guaranteed_returns"),
        supersedes=first,
        supersede_reason="The reviewer missed the guarantee in the second paragraph.",
    )
    assert correction.supersedes == first
    assert correction.sequence == first.sequence + 1
    assert first.superseded_by == correction
    first.message.refresh_from_db()
    assert first.message.status == "decided"


def test_the_original_reviewer_may_correct_their_own_decision_but_another_reviewer_may_not(
    reviewer, second_reviewer
):
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    with pytest.raises(NotPermitted):
        decision_record(
            message=first.message,
            reviewer=second_reviewer,
            verdict="no_claim",
            supersedes=first,
            supersede_reason="x",
        )
    own = decision_record(
        message=first.message,
        reviewer=reviewer,
        verdict="escalate",
        escalation_reason="unsure after all",
        supersedes=first,
        supersede_reason="second thoughts",
    )
    first.message.refresh_from_db()
    assert own.supersedes == first
    assert first.message.status == "escalated"


def test_only_the_latest_decision_can_be_superseded(reviewer, admin_user):
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    decision_record(
        message=first.message, reviewer=admin_user, verdict="no_claim", supersedes=first, supersede_reason="a"
    )
    with pytest.raises(DecisionInvalid, match="no longer the latest"):
        decision_record(
            message=first.message,
            reviewer=admin_user,
            verdict="no_claim",
            supersedes=first,
            supersede_reason="b",
        )


def test_a_correction_needs_a_reason(reviewer, admin_user):
    first = ReviewDecisionFactory(reviewer=reviewer, verdict="no_claim")
    with pytest.raises(DecisionInvalid, match="needs a reason"):
        decision_record(message=first.message, reviewer=admin_user, verdict="no_claim", supersedes=first)


def test_a_compliance_admins_final_decision_is_corrected_by_deciding_never_by_escalating(
    reviewer, admin_user
):
    escalation = ReviewDecisionFactory(reviewer=reviewer, verdict="escalate")
    final = decision_record(message=escalation.message, reviewer=admin_user, verdict="no_claim")
    with pytest.raises(DecisionInvalid, match="final"):
        decision_record(
            message=final.message,
            reviewer=admin_user,
            verdict="escalate",
            escalation_reason="not sure after all",
            supersedes=final,
            supersede_reason="second thoughts",
        )
    final.message.refresh_from_db()
    assert final.message.status == "decided"
    assert ReviewDecision.objects.filter(message=final.message).count() == 2


def test_decisions_form_a_hash_chain_from_the_genesis_hash(reviewer):
    decisions = [ReviewDecisionFactory(reviewer=reviewer) for _ in range(3)]
    assert [d.sequence for d in decisions] == [1, 2, 3]
    assert decisions[0].previous_hash == GENESIS_HASH
    assert decisions[1].previous_hash == decisions[0].content_hash
    assert decisions[2].previous_hash == decisions[1].content_hash
    stored = ReviewDecision.objects.get(pk=decisions[2].pk)
    assert record_hash(stored) == stored.content_hash
    assert audit_chain_report().summary() == "intact, 3 records"


def _run_in_threads(targets):
    barrier = threading.Barrier(len(targets))
    errors, results = [], []

    def run(target):
        try:
            barrier.wait()
            results.append(target())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results, errors


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_concurrent_decisions_never_fork_the_chain(committed_decisions):
    pairs = []
    for i in range(8):
        user = UserFactory(username=f"parallel{i}", role=Role.REVIEWER)
        pairs.append((user, claimed(user)))
    targets = [
        (lambda u=u, m=m: decision_record(message=m, reviewer=u, verdict="no_claim")) for u, m in pairs
    ]
    results, errors = _run_in_threads(targets)
    assert not errors
    assert sorted(d.sequence for d in results) == list(range(1, 9))
    assert audit_chain_report().summary() == "intact, 8 records"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_double_submission_racing_itself_writes_one_record(committed_decisions):
    user = UserFactory(username="double_clicker", role=Role.REVIEWER)
    message = claimed(user)
    target = lambda: decision_record(message=message, reviewer=user, verdict="no_claim")  # noqa: E731
    results, errors = _run_in_threads([target, target, target])
    assert len(results) == 1
    assert len(errors) == 2 and all(isinstance(e, AlreadyDecided) for e in errors)
    assert ReviewDecision.objects.filter(message=message).count() == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_decision_racing_a_claim_of_its_expired_lock_has_exactly_one_winner(committed_decisions):
    """The slow reviewer's lock has expired; they submit just as a colleague takes the message.
    Either the decision is recorded and the claim refused, or the claim wins and the decision is
    refused: never a decision on a message somebody else now holds. Real threads on every
    database (PostgreSQL: the message row lock; SQLite: one IMMEDIATE writer at a time)."""
    races = []
    for i in range(4):
        slow = UserFactory(username=f"slow{i}", role=Role.REVIEWER)
        quick = UserFactory(username=f"quick{i}", role=Role.REVIEWER)
        message = claimed(slow)
        ReviewLock.objects.filter(message=message).update(expires_at=timezone.now() - timedelta(minutes=1))
        races.append((slow, quick, message))

    def attempt(action):
        try:
            return action(), None
        except (LockNotHeld, DecisionInvalid) as exc:
            return None, exc

    targets = []
    for slow, quick, message in races:
        targets.append(
            lambda s=slow, m=message: (
                "decide",
                m.pk,
                *attempt(lambda: decision_record(message=m, reviewer=s, verdict="no_claim")),
            )
        )
        targets.append(
            lambda q=quick, m=message: ("claim", m.pk, *attempt(lambda: lock_claim(reviewer=q, message=m)))
        )
    results, errors = _run_in_threads(targets)

    assert not errors
    for slow, quick, message in races:
        outcome = {kind: (value, error) for kind, pk, value, error in results if pk == message.pk}
        decided, claim = outcome["decide"], outcome["claim"]
        message.refresh_from_db()
        decisions = ReviewDecision.objects.filter(message=message)
        if decided[0] is not None:  # the decision won: the claim came too late
            assert isinstance(claim[1], DecisionInvalid)
            assert message.status == "decided" and decisions.get().reviewer == slow
            assert not ReviewLock.objects.filter(message=message).exists()
        else:  # the claim won: the slow reviewer's lock is gone and nothing was recorded
            assert isinstance(decided[1], LockNotHeld) and claim[0] is not None
            assert message.status == "in_review" and not decisions.exists()
            assert ReviewLock.objects.get(message=message).reviewer == quick
