"""Reading a hand-written evaluation set: a file that cannot be used is refused, naming the line."""

from __future__ import annotations

import json

import pytest

from scoring.classifier.evaluation import EvaluationSetError, read_handwritten

ROW = {
    "id": "hw-1",
    "body": "Returns are guaranteed.",
    "label": 1,
    "claim_type": "guaranteed_returns",
    "kind": "plain",
}


def test_a_good_file_gives_its_rows(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(ROW) + "\n\n" + json.dumps({**ROW, "id": "hw-2", "label": 0}) + "\n")
    assert [r["id"] for r in read_handwritten(path)] == ["hw-1", "hw-2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json\n", r"set\.jsonl:1: not valid JSON"),
        (json.dumps({**ROW, "kind": None} | {"label": 2}) + "\n", r"row 1 needs id, body, label"),
        (json.dumps({k: v for k, v in ROW.items() if k != "kind"}) + "\n", r"row 1 needs"),
        ("\n", r"has no rows"),
    ],
)
def test_a_bad_file_is_refused_with_the_line(tmp_path, text, message):
    path = tmp_path / "set.jsonl"
    path.write_text(text)
    with pytest.raises(EvaluationSetError, match=message):
        read_handwritten(path)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(EvaluationSetError, match="does not exist"):
        read_handwritten(tmp_path / "absent.jsonl")
