import json
import random

import pytest
from django.conf import settings
from transformers import AutoTokenizer

from scoring.classifier.data import (
    Example,
    bucketed_batches,
    epoch_examples,
    erase_rationales,
    message_examples,
    read_rows,
)
from scoring.classifier.windows import make_windows
from scoring.errors import TrainingDataError
from tests.support.models import tiny_corpus_rows, write_jsonl

FILLER = "The office move is planned for spring and the agenda is attached. "


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(settings.BASE_MODEL_PATH)


def windows_of(tokenizer, text):
    return make_windows(tokenizer, [text], window_tokens=24, stride=8)[0]


def test_a_corpus_file_is_read_with_its_splits(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", tiny_corpus_rows())

    rows = read_rows(path, corpus=True)

    assert {r["split"] for r in rows} == {"train", "val", "test"}
    assert all(isinstance(span, tuple) for r in rows for span in r["rationales"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        (json.dumps({"body": "", "label": 0, "claim_type": "no_claim"}), "non-empty string"),
        (json.dumps({"body": "x", "label": 2, "claim_type": "no_claim"}), "'label' must be 0 or 1"),
        (json.dumps({"body": "x", "label": 1, "claim_type": "no_claim"}), "needs claim_type"),
        (json.dumps({"body": "x", "label": 0, "claim_type": "risk_free"}), "must have claim_type no_claim"),
        (
            json.dumps({"body": "abc", "label": 1, "claim_type": "risk_free", "rationales": [[1, 9]]}),
            "inside the body",
        ),
        (json.dumps(["a list"]), "JSON object"),
    ],
)
def test_a_malformed_extra_row_is_a_clear_error_naming_its_line(tmp_path, line, message):
    path = tmp_path / "extra.jsonl"
    path.write_text(json.dumps({"body": "fine", "label": 0, "claim_type": "no_claim"}) + "\n" + line + "\n")

    with pytest.raises(TrainingDataError, match=message):
        read_rows(path, corpus=False)


def test_extra_rows_always_join_the_train_split(tmp_path):
    path = tmp_path / "extra.jsonl"
    path.write_text(
        json.dumps(
            {"body": "Profits are certain.", "label": 1, "claim_type": "guaranteed_returns", "split": "test"}
        )
        + "\n"
    )

    [row] = read_rows(path, corpus=False)

    assert row["split"] == "train"
    assert row["id"] == "extra:extra.jsonl:1"


def test_a_corpus_without_claims_in_val_is_refused(tmp_path):
    rows = [r for r in tiny_corpus_rows() if not (r["split"] == "val" and r["label"] == 1)]

    with pytest.raises(TrainingDataError, match="no claims in its val split"):
        read_rows(write_jsonl(tmp_path / "c.jsonl", rows), corpus=True)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(TrainingDataError, match="does not exist"):
        read_rows(tmp_path / "nope.jsonl", corpus=False)


def claim_row(body, start, end):
    return {"label": 1, "claim_type": "risk_free", "rationales": [(start, end)], "body": body}


def test_a_short_message_is_one_example_with_its_class(tokenizer):
    row = claim_row("This is risk-free.", 0, 18)

    examples = message_examples(row, windows_of(tokenizer, row["body"]))

    assert [e.target for e in examples.fixed] == [2]  # index of risk_free in CLASS_LABELS
    assert examples.optional == []


def test_long_claim_windows_holding_the_claim_carry_its_type_and_neutral_windows_are_no_claim(tokenizer):
    claim = "Your capital is completely safe with us."
    body = FILLER * 4 + claim + " " + FILLER * 4
    start = body.index(claim)
    row = claim_row(body, start, start + len(claim))
    windows = windows_of(tokenizer, body)

    examples = message_examples(row, windows)

    positives = [w for w in windows if w.start <= start and start + len(claim) <= w.end]
    assert positives
    assert {e.windows[0] for e in examples.fixed} == {w.input_ids for w in positives}
    assert all(e.target == 2 for e in examples.fixed)
    neutral = [w for w in windows if w.end <= start or w.start >= start + len(claim)]
    assert {e.windows[0] for e in examples.optional} == {w.input_ids for w in neutral}
    assert all(e.target == 0 for e in examples.optional)
    # windows cutting the claim in half are in neither list
    assert len(examples.fixed) + len(examples.optional) < len(windows)


def test_a_long_claim_without_rationale_is_one_bag_of_all_its_windows(tokenizer):
    body = FILLER * 3 + "Returns are guaranteed. " + FILLER * 3
    row = {"label": 1, "claim_type": "guaranteed_returns", "rationales": [], "body": body}
    windows = windows_of(tokenizer, body)

    examples = message_examples(row, windows)

    [bag] = examples.fixed
    assert len(bag.windows) == len(windows) > 1
    assert bag.target == 1


def test_a_long_non_claim_offers_all_its_windows_as_no_claim(tokenizer):
    body = FILLER * 6
    windows = windows_of(tokenizer, body)

    examples = message_examples(
        {"label": 0, "claim_type": "no_claim", "rationales": [], "body": body}, windows
    )

    assert examples.fixed == [] and len(examples.optional) == len(windows)


def test_each_epoch_samples_a_few_neutral_windows_per_long_message(tokenizer):
    body = FILLER * 10
    messages = [
        message_examples(
            {"label": 0, "claim_type": "no_claim", "rationales": [], "body": body},
            windows_of(tokenizer, body),
        )
    ]

    first = epoch_examples(messages, negatives_per_message=2, rng=random.Random(1))
    second = epoch_examples(messages, negatives_per_message=2, rng=random.Random(2))

    assert len(first) == len(second) == 2
    assert first != second


def test_bucketed_batches_group_similar_lengths_and_keep_every_example():
    examples = [Example(((1,) * n,), 0) for n in [5, 50, 6, 51, 7, 52, 8, 53]]

    batches = bucketed_batches(examples, batch_size=4, rng=random.Random(0))

    assert sorted(len(e.windows[0]) for b in batches for e in b) == sorted(
        len(e.windows[0]) for e in examples
    )
    for batch in batches:
        lengths = [e.length for e in batch]
        assert max(lengths) - min(lengths) < 10


def claim_with_phrases(body: str, *phrases: str) -> dict:
    spans = [[body.index(p), body.index(p) + len(p)] for p in phrases]
    return {"id": "c1", "body": body, "label": 1, "claim_type": "risk_free", "rationales": spans}


def test_a_claim_with_its_claim_phrases_erased_is_its_no_claim_counterfactual():
    row = claim_with_phrases(
        "Hi Ann, about the Silverline fund at 6%: our fund is different. The payouts are certain. Best, Bob",
        "our fund is different.",
        "The payouts are certain.",
    )

    erased = erase_rationales(row)

    assert erased["label"] == 0 and erased["claim_type"] == "no_claim" and erased["rationales"] == []
    assert "certain" not in erased["body"] and "different" not in erased["body"]
    assert erased["body"] == "Hi Ann, about the Silverline fund at 6%: Best, Bob"
    assert erased["id"] == "c1:erased" and row["label"] == 1  # the claim itself is untouched


def test_nothing_is_erased_from_a_non_claim_a_claim_without_rationale_or_a_bare_claim():
    bare = claim_with_phrases("You cannot lose a penny, ok?", "You cannot lose a penny")

    assert erase_rationales({**bare, "label": 0, "claim_type": "no_claim", "rationales": []}) is None
    assert erase_rationales({**bare, "rationales": []}) is None
    assert erase_rationales(bare) is None  # "ok?" alone is no message to learn from
