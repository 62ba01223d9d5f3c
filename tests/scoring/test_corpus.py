"""The labelled corpus: determinism, schema, balance, slices, splits, novel/drift separation,
canaries, datasheet, and the generate_corpus command."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from scoring.constants import CLAIM_TYPE_CODES
from scoring.corpus import drift, novel
from scoring.corpus.framing import (
    PADDING_FORBIDDEN,
    PADDING_SENTENCES,
    PUNCTUATED_LEAD_INS,
    THAT_LEAD_INS,
    lead_in,
)
from scoring.corpus.generator import (
    CANARY_PATH,
    CORPUS_PATH,
    DATASHEET_PATH,
    DEFAULT_SEED,
    CorpusError,
    CorpusFiles,
    canary_ids,
    check_corpus_files,
    corpus_sha256,
    generate_corpus,
    generate_drift_messages,
    generate_traffic_messages,
    load_canary_ids,
    read_jsonl,
    write_jsonl,
)
from scoring.corpus.jsonl import rows_bytes
from scoring.corpus.render import TemplateError, render
from scoring.corpus.schema import CLAIM_TYPES, NO_CLAIM, SLICES, SPLITS, validate_row
from scoring.corpus.stats import count_table, current_block, word_count
from scoring.corpus.vocab import BASE, NOVEL_VOCABULARY_MARKERS

REPO_ROOT = Path(__file__).resolve().parents[2]
HARD_NEGATIVE_TRIGGERS = re.compile(
    r"guar|garant|return|risk|\bsec\b|fca|finra|ap+rov|endors|doub?l|triple|forecast|certain|safe|secur"
    r"|protect|backed|locked in|interest|intrest|principal|grow|rise|benchmark|perform|outlook|target|expect"
    r"|promis|lose|loss|regulat|yield|gain",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return read_jsonl(CORPUS_PATH)


@pytest.fixture(scope="module")
def fresh() -> list[dict]:
    return generate_corpus()


def _word_pattern(markers) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(m) for m in markers) + r")\b", re.IGNORECASE)


def _tokenizer():
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(settings.BASE_MODEL_PATH) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


# --- determinism and the committed file -----------------------------------------------------


def test_the_same_seed_gives_identical_bytes_and_another_seed_does_not(fresh):
    assert rows_bytes(generate_corpus()) == rows_bytes(fresh)
    assert rows_bytes(generate_corpus(7)) != rows_bytes(fresh)


def test_the_committed_corpus_canary_and_datasheet_equal_a_fresh_generation(fresh):
    assert check_corpus_files(fresh, CorpusFiles.at()) == []
    assert CORPUS_PATH.read_bytes() == rows_bytes(fresh)


def test_the_generator_imports_no_django():
    code = "import sys, scoring.corpus.generator; print(sorted(m for m in sys.modules if 'django' in m))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_corpus_claim_types_are_the_classifier_claim_classes():
    assert CLAIM_TYPES == CLAIM_TYPE_CODES


# --- schema and rationales ----------------------------------------------------------------


def test_every_row_follows_the_schema_with_sequential_ids(rows):
    problems = [(row["id"], validate_row(row)) for row in rows if validate_row(row)]
    assert problems == []
    assert [row["id"] for row in rows] == [f"cw-{i:05d}" for i in range(1, len(rows) + 1)]


def test_every_rationale_is_a_non_empty_span_inside_its_body_and_negatives_have_none(rows):
    for row in rows:
        if row["label"] == 0:
            assert row["rationales"] == [], row["id"]
            continue
        assert row["rationales"], row["id"]
        if "chat_transcript" not in row["slices"]:
            assert len(row["rationales"]) in (1, 2), row["id"]
        for start, end in row["rationales"]:
            text = row["body"][start:end]
            assert 0 <= start < end <= len(row["body"]) and text.strip() == text != "", row["id"]
            assert "\n" not in text, (row["id"], text)


def test_the_rationale_of_a_claim_holds_its_claim_word_not_the_greeting(rows):
    # the claim phrase itself, never the framing: spans never start a body that has a greeting
    for row in rows:
        if row["label"] == 1 and row["channel"] == "email" and "\n\n" in row["body"]:
            first_break = row["body"].index("\n\n")
            if row["body"][:first_break].rstrip().endswith(","):
                assert row["rationales"][0][0] > first_break, row["id"]


def test_a_broken_template_is_refused_with_a_clear_error():
    import random

    with pytest.raises(TemplateError, match="unbalanced"):
        render("[[oops", rng=random.Random(0), slot=lambda name: name)
    with pytest.raises(TemplateError, match="padded with spaces"):
        render("[[ oops ]]", rng=random.Random(0), slot=lambda name: name)


# --- size, balance, slices, splits ----------------------------------------------------------


def test_the_corpus_has_the_required_size_and_class_balance(rows):
    total = len(rows)
    claims = [row for row in rows if row["label"] == 1]
    negatives = [row for row in rows if row["label"] == 0]
    hard = [row for row in negatives if {"hard_negative", "negation"} & set(row["slices"])]
    assert 6000 <= total <= 8000
    assert 0.28 <= len(claims) / total <= 0.38
    per_type = Counter(row["claim_type"] for row in claims)
    assert set(per_type) == set(CLAIM_TYPES)
    assert max(per_type.values()) - min(per_type.values()) <= 0.05 * len(claims)
    assert len(hard) >= len(negatives) / 2


def test_every_slice_has_at_least_48_test_rows(rows):
    test_counts = Counter(tag for row in rows if row["split"] == "test" for tag in row["slices"])
    assert {tag: test_counts[tag] for tag in SLICES if test_counts[tag] < 48} == {}


def test_slices_hold_what_they_promise(rows):
    for row in rows:
        tags = row["slices"]
        kinds = [part[2] for part in row["structure"]]
        if "hard_negative" in tags or "negation" in tags:
            assert row["label"] == 0, row["id"]
        if "hard_negative" in tags and row["template"].startswith("hn-"):
            # the trigger-word families (negatives.HARD): claim words in innocent context (the
            # world families, e.g. forecasts attributed to others, are hard without them)
            assert HARD_NEGATIVE_TRIGGERS.search(row["body"]), row["id"]
        if "informal" in tags:
            assert row["channel"] in ("chat", "sms"), row["id"]
        if "padded" in tags:
            assert row["channel"] == "email", row["id"]
        if "long_email" in tags:
            assert word_count(row["body"]) >= 120 and row["channel"] == "email", row["id"]
        if "chat_transcript" in tags:  # one or more lines, each with its sender (and time)
            assert row["channel"] == "chat" and ":" in row["body"].split("\n")[0], row["id"]
        if "quoted_history" in tags:
            assert "quoted" in kinds, row["id"]
        if "signature" in tags:
            assert row["channel"] == "email" and ("signature" in kinds or "body" in kinds), row["id"]


def test_short_messages_are_short_and_padded_and_long_ones_are_long(rows):
    short = [
        word_count(row["body"])
        for row in rows
        if not {"padded", "long_email", "signature", "quoted_history", "chat_transcript"} & set(row["slices"])
    ]
    padded = [word_count(row["body"]) for row in rows if "padded" in row["slices"]]
    long = [word_count(row["body"]) for row in rows if "long_email" in row["slices"]]
    assert 12 <= statistics.median(short) <= 60
    assert min(padded) >= 150 and 200 <= len(padded) <= 300
    assert statistics.median(long) >= 300


def test_padded_claims_and_negatives_are_alike_in_number_and_length(rows):
    padded = [row for row in rows if "padded" in row["slices"]]
    lengths = {label: [word_count(r["body"]) for r in padded if r["label"] == label] for label in (0, 1)}
    assert abs(len(lengths[0]) - len(lengths[1])) <= 0.1 * len(padded)
    assert abs(statistics.mean(lengths[0]) / statistics.mean(lengths[1]) - 1) < 0.08


def test_padded_claims_sit_at_the_start_middle_and_end(rows):
    thirds = Counter()
    for row in rows:
        if "padded" in row["slices"] and row["label"] == 1:
            thirds[min(2, 3 * row["rationales"][0][0] // len(row["body"]))] += 1
    assert len(thirds) == 3 and min(thirds.values()) >= 0.2 * sum(thirds.values())


def test_padding_measures_200_to_600_wordpiece_tokens(rows):
    tokenizer = _tokenizer()
    padding, totals = [], []
    for row in rows:
        if "padded" not in row["slices"]:
            continue
        totals.append(len(tokenizer.encode(row["body"], add_special_tokens=False).ids))
        if row["label"] == 1:
            # greeting, padding paragraphs..., sign-off: drop the greeting, the sign-off and the
            # paragraph holding the claim; what is left is padding
            paragraphs = row["body"].split("\n\n")
            start = row["rationales"][0][0]
            offsets = [sum(len(p) + 2 for p in paragraphs[:i]) for i in range(len(paragraphs))]
            core = max(i for i, offset in enumerate(offsets) if offset <= start)
            rest = [p for i, p in enumerate(paragraphs[1:-1], start=1) if i != core]
            padding.append(len(tokenizer.encode(" ".join(rest), add_special_tokens=False).ids))
    assert min(padding) >= 190 and max(padding) <= 620
    assert min(totals) >= 200 and max(totals) <= 680


def test_no_body_appears_twice_or_in_two_splits(rows):
    bodies = Counter(row["body"] for row in rows)
    assert [body for body, n in bodies.items() if n > 1] == []
    by_split = {split: {row["body"] for row in rows if row["split"] == split} for split in SPLITS}
    assert not by_split["train"] & by_split["val"]
    assert not by_split["train"] & by_split["test"]
    assert not by_split["val"] & by_split["test"]


def test_splits_are_about_60_20_20_for_every_claim_type(rows):
    for code in (*CLAIM_TYPES, NO_CLAIM):
        counts = Counter(
            row["split"]
            for row in rows
            if row["claim_type"] == code and "novel_phrasing" not in row["slices"]
        )
        total = sum(counts.values())
        assert abs(counts["train"] / total - 0.60) < 0.03, code
        assert abs(counts["val"] / total - 0.20) < 0.03, code
        assert abs(counts["test"] / total - 0.20) < 0.03, code


def test_no_template_family_or_content_part_is_in_two_splits(rows):
    splits_of = {}
    for row in rows:
        for family in [row["template"], *row["parts"]]:
            if not family.startswith("shape:"):
                splits_of.setdefault(family, set()).add(row["split"])
    assert {family: s for family, s in splits_of.items() if len(s) > 1} == {}


def test_every_split_has_many_families_of_every_claim_type(rows):
    for split in SPLITS:
        per_type = Counter(
            row["claim_type"]
            for row in {r["template"]: r for r in rows if r["label"] == 1 and r["split"] == split}.values()
        )
        assert set(per_type) == set(CLAIM_TYPES) and min(per_type.values()) >= 20, (split, per_type)


def test_every_claim_family_has_its_counterpart_in_its_split(rows):
    from scoring.corpus.banks import counterparts, split_banks

    banks = split_banks(DEFAULT_SEED)
    pairs = counterparts()
    assert [f for f, (pair, _) in pairs.items() if banks.split_of[pair] != banks.split_of[f]] == []
    templates = {row["template"] for row in rows}
    used = [f for f in pairs if f in templates]
    assert len(used) >= 0.9 * len(pairs)
    assert sum(1 for f in used if pairs[f][0] in templates) >= 0.9 * len(used)


def test_the_segmenter_finds_the_parts_the_generator_built(rows):
    from scoring.segmentation import routing_segments, segment

    misses = []
    for row in rows:
        found = segment(row["body"])
        routing = routing_segments(found)
        for start, end in row["rationales"]:
            if not any(part.start <= start and end <= part.end for part in routing):
                misses.append((row["id"], "rationale outside the routing parts"))
        for start, _, kind in row["structure"]:
            if kind != "body" and not any(part.kind == kind and part.start == start for part in found):
                misses.append((row["id"], f"{kind} at {start} not found"))
    assert misses == []


def test_no_hand_written_evaluation_message_is_in_the_corpus(rows):
    from scoring.classifier.evaluation import read_handwritten

    bodies = {row["body"].strip() for row in rows}
    directory = Path(settings.EVALUATION_SETS_DIR)
    sets = sorted(directory.glob("*.jsonl"))
    assert {p.stem for p in sets} >= {"eval", "ordinary", "dev"}
    for path in sets:
        hand = read_handwritten(path)
        assert len({r["id"] for r in hand}) == len(hand), path
        assert [r["id"] for r in hand if r["body"].strip() in bodies] == [], path


def test_novel_phrasing_rows_are_only_in_test_and_their_templates_and_vocabulary_never_reach_train_or_val(
    rows,
):
    novel_rows = [row for row in rows if "novel_phrasing" in row["slices"]]
    assert {row["split"] for row in novel_rows} == {"test"}
    assert {row["label"] for row in novel_rows} == {0, 1}
    assert all(row["slices"] == ["novel_phrasing"] for row in novel_rows)
    seen = [row for row in rows if row["split"] in ("train", "val")]
    novel_templates = {row["template"] for row in novel_rows}
    assert novel_templates.isdisjoint(row["template"] for row in seen)
    markers = _word_pattern(novel.NOVEL_PHRASE_MARKERS + NOVEL_VOCABULARY_MARKERS)
    assert [
        (row["id"], markers.search(row["body"]).group(0)) for row in seen if markers.search(row["body"])
    ] == []


def test_every_novel_template_uses_a_test_only_phrase():
    phrases = _word_pattern(novel.NOVEL_PHRASE_MARKERS)
    families = [f for group in novel.CLAIMS.values() for f in group] + list(novel.NEGATIVES)
    assert [family_id for family_id, template in families if not phrases.search(template)] == []


def _lead_in_pattern() -> re.Pattern:
    fixed = [lead.split("{")[0] for lead in THAT_LEAD_INS + PUNCTUATED_LEAD_INS]
    return re.compile("|".join(re.escape(f[:1].upper() + f[1:]) for f in fixed))


def test_sender_lead_ins_go_before_claims_and_negatives_alike(rows):
    # A lead-in is framing: at the same rate on both labels it cannot predict the label.
    pattern = _lead_in_pattern()
    rate = {
        label: sum(bool(pattern.search(r["body"])) for r in rows if r["label"] == label)
        / sum(r["label"] == label for r in rows)
        for label in (0, 1)
    }
    assert rate[1] > 0.08 and abs(rate[0] - rate[1]) < 0.06, rate


def test_a_that_lead_in_never_goes_before_a_question_or_a_sentence_that_names_its_speaker():
    import random

    from scoring.corpus.render import Rendered

    that = tuple(lead[:1].upper() + lead[1:] for lead in THAT_LEAD_INS)
    for core in ("Is the fund guaranteed?", "I can confirm that the fund is safe.", "We will pay 8%."):
        for seed in range(200):
            led = lead_in(Rendered(core, [(0, len(core))]), rng=random.Random(seed), slot=lambda name: "X")
            assert not led.text.startswith(that), led.text
            start, end = led.spans[0]
            assert led.text[start:end].lower() == core.lower()  # the span moves with the core


def test_the_lead_ins_hold_no_claim_vocabulary():
    forbidden = _word_pattern(PADDING_FORBIDDEN + novel.NOVEL_PHRASE_MARKERS + drift.DRIFT_MARKERS)
    assert [lead for lead in THAT_LEAD_INS + PUNCTUATED_LEAD_INS if forbidden.search(lead)] == []


def test_the_padding_bank_holds_no_claim_vocabulary():
    forbidden = _word_pattern(PADDING_FORBIDDEN + novel.NOVEL_PHRASE_MARKERS + drift.DRIFT_MARKERS)
    assert [s for s in PADDING_SENTENCES if forbidden.search(s)] == []
    assert "%" not in "".join(PADDING_SENTENCES)


# --- canaries and the datasheet --------------------------------------------------------------


def test_canary_ids_are_test_split_claims_of_all_four_types(rows):
    ids = canary_ids(rows)
    by_id = {row["id"]: row for row in rows}
    chosen = [by_id[i] for i in ids]
    assert len(ids) == len(set(ids)) == 40
    assert all(row["split"] == "test" and row["label"] == 1 for row in chosen)
    assert Counter(row["claim_type"] for row in chosen) == dict.fromkeys(CLAIM_TYPES, 10)
    assert not any("novel_phrasing" in row["slices"] for row in chosen)
    assert {"standard", "informal", "split_sentence", "padded"} <= {
        tag for row in chosen for tag in row["slices"]
    }
    assert load_canary_ids(CANARY_PATH) == ids


def test_canary_json_records_the_sha256_of_the_corpus_it_came_from():
    document = json.loads(CANARY_PATH.read_text(encoding="utf-8"))
    assert document["corpus_sha256"] == corpus_sha256(CORPUS_PATH)


def test_the_datasheet_count_tables_match_the_committed_corpus(rows):
    assert current_block(DATASHEET_PATH.read_text(encoding="utf-8")) == count_table(rows)


# --- drift and traffic messages -----------------------------------------------------------


def test_drift_messages_share_no_template_or_euphemism_with_the_corpus(rows):
    messages = generate_drift_messages(seed=3, n=240, claim_types=list(CLAIM_TYPES))
    assert {row["template"] for row in messages}.isdisjoint(row["template"] for row in rows)
    euphemisms = re.compile(
        "|".join(r"(?<![\w@])" + re.escape(m) + r"(?![\w@])" for m in drift.DRIFT_MARKERS), re.IGNORECASE
    )
    assert [row["id"] for row in rows if euphemisms.search(row["body"])] == []
    assert all(euphemisms.search(drift.plain_letters(row["body"])) for row in messages)
    assert {drift.plain_letters(row["body"]) for row in messages}.isdisjoint(row["body"] for row in rows)
    # written in look-alike letters, which no corpus message uses
    glyphs = set(drift.HOMOGLYPHS.values())
    assert all(glyphs & set(row["body"]) for row in messages)
    assert [row["id"] for row in rows if glyphs & set(row["body"])] == []


def test_drift_messages_are_deterministic_claims_of_the_requested_types_in_the_row_schema():
    first = generate_drift_messages(seed=5, n=30, claim_types=["risk_free", "regulatory_endorsement"])
    assert first == generate_drift_messages(seed=5, n=30, claim_types=["risk_free", "regulatory_endorsement"])
    assert first != generate_drift_messages(seed=6, n=30, claim_types=["risk_free", "regulatory_endorsement"])
    assert all(validate_row(row, allow_extra_splits=True) == [] for row in first)
    assert Counter(row["claim_type"] for row in first) == {"risk_free": 15, "regulatory_endorsement": 15}
    assert {row["split"] for row in first} == {"drift"} and all(row["label"] == 1 for row in first)
    assert all("drift" in row["slices"] for row in first)
    assert len({row["body"] for row in first}) == 30


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seed": 1, "n": -1, "claim_types": ["risk_free"]},
        {"seed": 1, "n": 5, "claim_types": []},
        {"seed": 1, "n": 5, "claim_types": ["no_claim"]},
        {"seed": 1, "n": 5, "claim_types": "risk_free"},
        {"seed": "x", "n": 5, "claim_types": ["risk_free"]},
    ],
)
def test_drift_messages_refuse_bad_arguments(kwargs):
    with pytest.raises(CorpusError):
        generate_drift_messages(**kwargs)


def test_traffic_messages_are_ordinary_messages_with_the_requested_claim_rate(rows):
    traffic = generate_traffic_messages(seed=11, n=400, claim_rate=0.1)
    assert traffic == generate_traffic_messages(seed=11, n=400, claim_rate=0.1)
    assert sum(row["label"] for row in traffic) == 40
    assert all(validate_row(row, allow_extra_splits=True) == [] for row in traffic)
    assert {row["split"] for row in traffic} == {"traffic"}
    negatives = [row for row in traffic if row["label"] == 0]
    assert sum("standard" in row["slices"] for row in negatives) > len(negatives) / 2
    assert any("hard_negative" in row["slices"] for row in negatives)
    assert {row["body"] for row in traffic}.isdisjoint(row["body"] for row in rows)
    corpus_templates = {row["template"] for row in rows if "novel_phrasing" not in row["slices"]}
    assert {row["template"] for row in traffic} <= corpus_templates


@pytest.mark.parametrize("claim_rate", [-0.1, 1.5, "0.1", True])
def test_traffic_messages_refuse_a_bad_claim_rate(claim_rate):
    with pytest.raises(CorpusError, match="claim_rate"):
        generate_traffic_messages(seed=1, n=10, claim_rate=claim_rate)


# --- reading and writing -------------------------------------------------------------------


def test_read_jsonl_names_the_line_of_bad_json(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        CORPUS_PATH.read_text(encoding="utf-8").splitlines()[0] + "\n{not json\n", encoding="utf-8"
    )
    with pytest.raises(CorpusError, match=r"bad\.jsonl:2: not valid JSON"):
        read_jsonl(path)


def test_write_jsonl_refuses_invalid_rows_and_writes_nothing(tmp_path, rows):
    broken = dict(rows[0], rationales=[[0, 10_000]], label=1, claim_type="risk_free")
    path = tmp_path / "out.jsonl"
    with pytest.raises(CorpusError, match="outside the body"):
        write_jsonl([rows[1], broken], path)
    assert not path.exists()


def test_write_then_read_round_trips_the_rows(tmp_path, rows):
    path = tmp_path / "copy.jsonl"
    sha = write_jsonl(rows[:50], path)
    assert read_jsonl(path) == rows[:50]
    assert corpus_sha256(path) == sha


# --- the management command ------------------------------------------------------------------


def test_generate_corpus_check_passes_on_the_committed_files():
    out = StringIO()
    call_command("generate_corpus", "--check", stdout=out)
    assert "matches a fresh generation" in out.getvalue()


def test_generate_corpus_writes_the_committed_bytes_and_a_canary_list_to_another_path(tmp_path):
    target = tmp_path / "claims.jsonl"
    call_command("generate_corpus", "--out", str(target), stdout=StringIO())
    assert target.read_bytes() == CORPUS_PATH.read_bytes()
    assert load_canary_ids(tmp_path / "canary.json") == load_canary_ids(CANARY_PATH)
    assert not (tmp_path / "DATASHEET.md").exists()


def test_generate_corpus_check_fails_when_the_file_differs(tmp_path):
    target = tmp_path / "claims.jsonl"
    call_command("generate_corpus", "--out", str(target), stdout=StringIO())
    lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = (
        lines[2].replace('"label": 1', '"label": 0') if '"label": 1' in lines[2] else lines[2][:-2] + " }\n"
    )
    target.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(CommandError, match="line 3"):
        call_command("generate_corpus", "--out", str(target), "--check", stdout=StringIO())


def test_generate_corpus_into_a_missing_directory_fails_and_writes_nothing(tmp_path):
    target = tmp_path / "missing" / "claims.jsonl"
    with pytest.raises(CommandError, match="does not exist"):
        call_command("generate_corpus", "--out", str(target), stdout=StringIO())
    assert not (tmp_path / "missing").exists()


def test_base_vocabulary_has_many_products_and_companies():
    assert len(BASE.product_prefixes) * len(BASE.product_kinds) >= 500
    assert len(BASE.companies) >= 20
