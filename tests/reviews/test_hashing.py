import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pytest

from reviews.hashing import (
    GENESIS_HASH,
    HASHED_FIELDS,
    canonical_json,
    chain_verify,
    record_content,
    record_hash,
)


def record(sequence: int, previous_hash: str, **changes) -> dict:
    row = {name: None for name in HASHED_FIELDS}
    row.update(
        sequence=sequence,
        message_id=sequence,
        reviewer_id=1,
        verdict="claim",
        note="",
        escalation_reason="",
        supersede_reason="",
        is_second_level=False,
        snapshot={"prediction": {"score": 0.91, "threshold": 0.5}, "rule_matches": []},
        model_score=0.91,
        is_qa_sample=False,
        created_at=datetime(2026, 1, 1, 12, 0, sequence, tzinfo=UTC),
        previous_hash=previous_hash,
    )
    row.update(changes)
    row["id"] = 100 + sequence
    row["content_hash"] = record_hash(row)
    return row


def chain(n: int) -> list[dict]:
    rows, previous = [], GENESIS_HASH
    for sequence in range(1, n + 1):
        rows.append(record(sequence, previous))
        previous = rows[-1]["content_hash"]
    return rows


def test_canonical_json_sorts_keys_and_has_no_whitespace():
    assert canonical_json({"b": 1, "a": [True, None, "x"]}) == '{"a":[true,null,"x"],"b":1}'


def test_canonical_json_writes_floats_with_the_fixed_17_digit_format():
    assert canonical_json(0.1) == "0.10000000000000001"
    assert canonical_json(1.0) == "1"
    assert canonical_json(1) == "1"


def test_canonical_json_writes_datetimes_as_utc_with_microseconds():
    moment = datetime(2026, 3, 1, 13, 0, 0, 5, tzinfo=timezone(timedelta(hours=1)))
    assert canonical_json(moment) == '"2026-03-01T12:00:00.000005Z"'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), datetime(2026, 1, 1), {1: "x"}, object()])
def test_canonical_json_refuses_values_it_cannot_write_one_way(bad):
    with pytest.raises(ValueError):
        canonical_json(bad)


def test_the_same_content_in_any_key_order_hashes_the_same():
    row = record(1, GENESIS_HASH)
    shuffled = dict(reversed(list(row.items())))
    assert record_hash(shuffled) == record_hash(row)


def test_the_hash_covers_the_previous_hash():
    assert record(1, GENESIS_HASH)["content_hash"] != record(1, "f" * 64)["content_hash"]


def test_an_untouched_chain_verifies_intact():
    report = chain_verify(chain(5))
    assert report.intact
    assert report.count == 5
    assert report.summary() == "intact, 5 records"


def test_an_empty_chain_is_intact_with_zero_records():
    report = chain_verify([])
    assert report.intact and report.count == 0 and report.head_hash == GENESIS_HASH


def test_an_edited_record_is_named_as_the_first_broken_one():
    rows = chain(5)
    rows[2] = {**rows[2], "note": "quietly changed"}
    report = chain_verify(rows)
    assert not report.intact
    assert report.broken.sequence == 3
    assert "altered" in report.broken.reason
    assert report.count == 2


def test_a_rehashed_edit_is_caught_by_the_next_records_link():
    rows = chain(4)
    forged = {**rows[1], "verdict": "no_claim"}
    forged["content_hash"] = record_hash(forged)
    rows[1] = forged
    report = chain_verify(rows)
    assert report.broken.sequence == 3
    assert "previous_hash" in report.broken.reason


def test_a_record_deleted_from_the_middle_is_caught_as_a_sequence_gap():
    rows = chain(4)
    del rows[1]
    report = chain_verify(rows)
    assert report.broken.sequence == 3
    assert "missing" in report.broken.reason


# --- The hash format, pinned --------------------------------------------------------------------
# Every production chain was hashed in this format. A change to HASHED_FIELDS, to the canonical
# encoding or to the digest makes every stored record look altered, so it must fail here first
# (and then needs a versioned migration of the format, not an edit of these constants).

GOLDEN_ROW = {
    "sequence": 7,
    "message_id": 42,
    "reviewer_id": 3,
    "verdict": "claim",
    "claim_type_id": 2,
    "note": "Caf\u00e9 \u2014 \u201cguaranteed\u201d 12 %",
    "escalation_reason": "",
    "supersedes_id": None,
    "supersede_reason": "",
    "is_second_level": False,
    "snapshot": {
        "message": {
            "id": 42,
            "body_sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        },
        "prediction": {
            "score": 0.9134,
            "threshold": 0.5,
            "probabilities": {"no_claim": 0.0866, "risk_free": 1e-05},
        },
        "rule_matches": [{"rule_code": "GR-001", "start": 16, "end": 34}],
        "explanation": None,
        "is_qa_sample": False,
    },
    "model_version_id": 5,
    "model_score": 0.9134,
    "model_threshold": 0.5,
    "model_flagged": True,
    "model_claim_type_id": 2,
    "is_qa_sample": False,
    "agrees_with_model": True,
    "claim_type_matches": None,
    "created_at": datetime(2026, 3, 1, 13, 30, 5, 123456, tzinfo=timezone(timedelta(hours=1))),
    "previous_hash": "ab" * 32,
}
GOLDEN_TEXT = (
    '{"agrees_with_model":true,"claim_type_id":2,"claim_type_matches":null,'
    '"created_at":"2026-03-01T12:30:05.123456Z","escalation_reason":"","is_qa_sample":false,'
    '"is_second_level":false,"message_id":42,"model_claim_type_id":2,"model_flagged":true,'
    '"model_score":0.91339999999999999,"model_threshold":0.5,"model_version_id":5,'
    '"note":"Caf\\u00e9 \\u2014 \\u201cguaranteed\\u201d 12 %",'
    '"previous_hash":"abababababababababababababababababababababababababababababababab",'
    '"reviewer_id":3,"sequence":7,"snapshot":{"explanation":null,"is_qa_sample":false,'
    '"message":{"body_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","id":42},'
    '"prediction":{"probabilities":{"no_claim":0.086599999999999996,"risk_free":1.0000000000000001e-05},'
    '"score":0.91339999999999999,"threshold":0.5},"rule_matches":[{"end":34,"rule_code":"GR-001","start":16}]},'
    '"supersede_reason":"","supersedes_id":null,"verdict":"claim"}'
)
GOLDEN_DIGEST = "6092abdc607b44061cce243beb15a980ce1afee8c51ad314f3b9793a7108e203"


def test_the_hashed_fields_and_their_canonical_text_are_pinned():
    assert canonical_json(record_content(GOLDEN_ROW)) == GOLDEN_TEXT


def test_the_record_digest_is_pinned_by_a_golden_value():
    assert hashlib.sha256(GOLDEN_TEXT.encode("ascii")).hexdigest() == GOLDEN_DIGEST
    assert record_hash(GOLDEN_ROW) == GOLDEN_DIGEST


def test_a_new_hashed_field_cannot_slip_in_unnoticed():
    # record_content reads exactly HASHED_FIELDS: a field added there is missing from the golden row
    assert set(GOLDEN_ROW) == set(HASHED_FIELDS)


@pytest.mark.django_db
def test_a_record_stored_and_read_back_from_the_database_hashes_to_the_golden_digest():
    """The database round trip (JSON snapshot, float and datetime columns) keeps the format."""
    from django.contrib.auth.models import User

    from reviews.models import ReviewDecision
    from scoring.models import ClaimType
    from tests.factories import MessageFactory, ModelVersionFactory

    User.objects.create(id=3, username="golden")
    MessageFactory(id=42)
    ModelVersionFactory(id=5)
    assert ClaimType.objects.filter(id=2).exists()  # seeded by scoring's data migration
    ReviewDecision(**GOLDEN_ROW, content_hash=GOLDEN_DIGEST).save(force_insert=True)
    stored = ReviewDecision.objects.values("content_hash", *HASHED_FIELDS).get(sequence=7)
    assert record_hash(stored) == GOLDEN_DIGEST
