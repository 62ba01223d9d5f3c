"""The hand-labelled feedback set (scoring/corpus/feedback/, its README): rows as reviewers' exports
would give them, for `train_classifier --extra`. Not in the default training (README, "The model").
These checks keep it usable and honest: every row is a valid --extra row whose claim phrase is
inside it, and no row is a message of a hand-written evaluation set (those are never trained on)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from django.conf import settings

from scoring.classifier.data import read_rows
from scoring.classifier.evaluation import read_handwritten
from scoring.constants import CLAIM_TYPE_CODES

FEEDBACK = Path(settings.BASE_DIR) / "scoring" / "corpus" / "feedback" / "reviewed.jsonl"


def test_every_feedback_row_is_a_valid_extra_row_with_its_claim_phrase_marked():
    rows = read_rows(FEEDBACK, corpus=False)

    assert len(rows) == 200
    assert Counter(r["label"] for r in rows) == {0: 130, 1: 70}
    assert {r["claim_type"] for r in rows if r["label"] == 1} == set(CLAIM_TYPE_CODES)
    assert all(len(r["rationales"]) == 1 for r in rows if r["label"] == 1)
    assert all(r["rationales"] == [] for r in rows if r["label"] == 0)
    assert len({r["body"] for r in rows}) == len(rows)


def test_no_feedback_row_is_a_message_of_a_hand_written_evaluation_set():
    bodies = {row["body"].strip() for row in read_rows(FEEDBACK, corpus=False)}
    sets = sorted(Path(settings.EVALUATION_SETS_DIR).glob("*.jsonl"))

    assert sets
    for path in sets:
        assert [r["id"] for r in read_handwritten(path) if r["body"].strip() in bodies] == [], path
