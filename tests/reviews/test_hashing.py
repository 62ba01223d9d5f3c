from datetime import UTC, datetime, timedelta, timezone

import pytest

from reviews.hashing import GENESIS_HASH, HASHED_FIELDS, canonical_json, chain_verify, record_hash


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
