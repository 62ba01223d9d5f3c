"""The hand-written training rows (scoring/corpus/written/, its README): messages composed by hand
in the shapes of real mail and chat, added to the corpus's train split by every default training
(settings.TRAINING_EXTRA_FILES). These checks keep them usable and keep the measurements honest:
every row is a valid training row whose claim phrases are marked inside it; none is a message of a
hand-written evaluation set (never trained on); none uses the words the corpus keeps for its
`novel_phrasing` test slice or for the drift that the closing-the-loop story needs the model to miss."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from pathlib import Path

from django.conf import settings

from scoring.classifier.data import read_rows
from scoring.classifier.evaluation import read_handwritten
from scoring.constants import CLAIM_TYPE_CODES
from scoring.corpus import drift, novel
from scoring.corpus.vocab import NOVEL_VOCABULARY_MARKERS
from scoring.services.model_versions import train_config_from_settings

WRITTEN = Path(settings.BASE_DIR) / "scoring" / "corpus" / "written"


def _files() -> list[Path]:
    return sorted(WRITTEN.glob("*.jsonl"))


def _rows() -> list[dict]:
    return [row for path in _files() for row in read_rows(path, corpus=False)]


def _word_pattern(markers) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(m) for m in markers) + r")\b", re.IGNORECASE)


def test_the_default_training_reads_every_written_file():
    assert _files(), "scoring/corpus/written/ holds the hand-written training rows"
    assert train_config_from_settings().extra_paths == tuple(str(path) for path in _files())


def test_every_written_row_is_a_training_row_with_its_claim_phrases_marked():
    rows = _rows()
    claims = [r for r in rows if r["label"] == 1]

    assert len(rows) >= 400
    assert {r["claim_type"] for r in claims} == set(CLAIM_TYPE_CODES)
    assert min(Counter(r["claim_type"] for r in claims).values()) >= 25
    assert all(r["rationales"] == [] for r in rows if r["label"] == 0)
    assert len({r["id"] for r in rows}) == len({r["body"] for r in rows}) == len(rows)
    for row in claims:
        spans = sorted(row["rationales"])
        assert spans, row["id"]
        assert all(0 <= start < end <= len(row["body"]) for start, end in spans), row["id"]
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), row["id"]
        assert all(row["body"][start:end].strip() for start, end in spans), row["id"]


def test_no_written_row_uses_a_test_only_or_drift_word():
    markers = _word_pattern(novel.NOVEL_PHRASE_MARKERS + NOVEL_VOCABULARY_MARKERS + drift.DRIFT_MARKERS)
    homoglyphs = set(drift.HOMOGLYPHS.values())

    found = [(r["id"], m.group(0)) for r in _rows() if (m := markers.search(r["body"]))]
    assert found == []
    assert [r["id"] for r in _rows() if homoglyphs & set(r["body"])] == []


def test_no_written_row_is_a_message_of_a_hand_written_evaluation_set():
    bodies = {row["body"].strip() for row in _rows()}
    sets = sorted(Path(settings.EVALUATION_SETS_DIR).glob("*.jsonl"))

    assert sets
    for path in sets:
        assert [r["id"] for r in read_handwritten(path) if r["body"].strip() in bodies] == [], path
