"""The quality bar of the real classifier (the default `train_classifier` configuration on the
committed corpus), measured here again: the saved artifact is loaded by a fresh Scorer and the
corpus test split scored, independently of the numbers training wrote into metrics.json.

Slow: the first run trains the model (<= 10 minutes on a 2-core CPU); later runs reuse it from
var/test-cache/ as long as the corpus, the hyper-parameters and the training code are unchanged."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from scoring.classifier.evaluation import reliability
from scoring.classifier.metrics import NOVEL, format_report, quality_bar, summarize
from scoring.classifier.precision import BFLOAT16, FLOAT32, native_bf16
from scoring.classifier.scorer import Scorer
from scoring.constants import CLAIM_TYPE_CODES
from scoring.corpus.jsonl import read_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def float32_test_split(trained_model_artifact):
    """The corpus test split scored once by a fresh float32 Scorer: (scorer, rows, results). The
    quality bar reads it, and it is the bfloat16 test's reference (the flags and claim types the
    bar counts are then bf16's too, which that test asserts)."""
    scorer = Scorer(
        trained_model_artifact,
        device="cpu",
        window_tokens=settings.WINDOW_TOKENS,
        stride=settings.WINDOW_STRIDE,
        token_budget=settings.TOKEN_BUDGET,
        precision=FLOAT32,
    )
    rows = [r for r in read_jsonl(settings.CORPUS_PATH) if r["split"] == "test"]
    return scorer, rows, scorer.score([r["body"] for r in rows])


@pytest.fixture(scope="module")
def test_split_scored(float32_test_split):
    scorer, rows, results = float32_test_split
    scored = [
        {**row, "score": result.score, "predicted_type": result.claim_type}
        for row, result in zip(rows, results, strict=True)
    ]
    return scorer.threshold, scored


# Where the CPU has no bf16 instructions torch emulates bf16, several times slower than float32,
# and "auto" never computes in bf16 there. On a 2-core AVX2-only host (Zen 3) the whole split took
# 599 s in bf16 (CI of 2026-12-07), a quarter of it 155 s, its float32 pass about 90 s. There the
# check reads every EMULATED_STRIDE-th message, a deterministic uniform sample; where the CPU has
# bf16 (AVX512-BF16, AMX), the precision "auto" picks, it reads the whole split.
EMULATED_STRIDE = 4


def test_bfloat16_flags_and_types_the_test_messages_as_float32_does(float32_test_split):
    # given the trained classifier in both number formats, deciding at its threshold (float32's
    # scores of the test split: the module's one float32 pass)
    exact, rows, reference = float32_test_split
    fast = exact.with_precision(BFLOAT16)
    if not native_bf16("cpu"):
        rows, reference = rows[::EMULATED_STRIDE], reference[::EMULATED_STRIDE]

    # when
    results = fast.score([r["body"] for r in rows])

    # then the flags, and the claim types of flagged messages, are float32's, re-scoring only
    # the windows near the threshold; the other scores move by bf16 rounding only
    threshold = exact.threshold
    assert [r.score >= threshold for r in results] == [r.score >= threshold for r in reference]
    flagged = [(a, b) for a, b in zip(results, reference, strict=True) if b.score >= threshold]
    assert flagged and all(a.claim_type == b.claim_type for a, b in flagged)
    assert max(abs(a.score - b.score) for a, b in zip(results, reference, strict=True)) < 0.05
    counts = fast.recheck_counts
    assert 0 < counts["rechecked"] < 0.5 * counts["windows"], counts


def _training_record(artifact) -> dict:
    """How the run went (plan, epochs, seconds): what a failure needs to be read."""
    training = json.loads((artifact / "metrics.json").read_text())["training"]
    return {k: v for k, v in training.items() if k not in ("train_messages", "history")}


# The bars of issue 15 that the default configuration reaches on this machine kind, asserted here on
# a fresh Scorer (the faithfulness bars on the canaries: tests/explanations/test_canary_faithfulness.py).
# Since 2026-12-07 (hand-written training rows, the threshold on the development sets) the default
# also reaches the hand-written set's calibration (ECE <= 0.05: 0.025 with seed 13, 0.040 with seed
# 14), asserted below. Reached by the default (seed 13, AMD EPYC with AVX512-BF16) by one message
# each, so not asserted (another host's weights differ by a message or two): the hand-written set's
# routed recall >= 0.90 (0.914: 117 of 128 claims, 116 needed; seed 14 gives 0.883) and ordinary
# traffic routed <= 2 % (3 of 234, 4 allowed; seed 14: 3). Reached with room, but needing the rule
# set's routing, which the artifact's metrics do not have: routed precision >= 0.85 (0.936; seed 14
# 0.934). Not reached (README, "The model", has the figures): on the family-disjoint test split
# recall and precision >= 0.95 and recall >= 0.90 for every claim type; on the hand-written set
# hard-negative FPR <= 0.05 (0.067). The padded recall gap (<= 0.05: 0.031) is in metrics.json's
# quality bar.


def test_novel_phrasing_claims_are_recalled_at_high_precision(trained_model_artifact, test_split_scored):
    threshold, scored = test_split_scored
    novel = summarize([r for r in scored if NOVEL in r["slices"]], threshold)["overall"]
    assert novel["recall"] >= 0.90 and novel["precision"] >= 0.90, (
        novel,
        _training_record(trained_model_artifact),
    )


def test_the_quality_bar_reports_every_check_on_the_family_disjoint_test_split(test_split_scored):
    threshold, scored = test_split_scored
    summary = summarize([r for r in scored if NOVEL not in r["slices"]], threshold)

    checks = quality_bar(summary)

    assert set(summary["per_claim_type"]) == set(CLAIM_TYPE_CODES)
    assert {f"recall {code}" for code in CLAIM_TYPE_CODES} <= {c["check"] for c in checks}
    assert all(c["value"] is not None for c in checks)


def test_scores_are_calibrated_on_val_and_the_hand_written_set_and_a_fresh_scorer_reproduces_it(
    trained_model_artifact, test_split_scored
):
    # given what training measured with the scorer it saved (temperature and length term fitted
    # on val, folded into the artifact) and the module's one fresh float32 pass of the test split
    metrics = json.loads((trained_model_artifact / "metrics.json").read_text())
    _, scored = test_split_scored

    # when the fresh scorer's reliability table is computed on the held-out test split
    fresh = reliability([r["score"] for r in scored], [r["label"] for r in scored])

    # then val is calibrated, and the saved artifact scores what training measured (the test
    # split stands in for val here: scoring val a second time cost 30 s of every run and proved
    # the same thing, that the calibration is in the saved head)
    assert metrics["calibration"]["val"]["ece"] <= 0.05, metrics["calibration"]["val"]
    # and so is the hand-written evaluation set (never trained on, never used for the threshold)
    assert metrics["evaluation_sets"]["eval"]["calibration"]["ece"] <= 0.05, metrics["evaluation_sets"][
        "eval"
    ]
    assert fresh["n"] == metrics["calibration"]["test"]["n"]
    assert fresh["ece"] == pytest.approx(metrics["calibration"]["test"]["ece"], abs=0.005), (
        fresh,
        metrics["calibration"]["test"],
    )


def test_metrics_json_reports_what_a_fresh_scorer_measures(trained_model_artifact, test_split_scored):
    threshold, scored = test_split_scored
    metrics = json.loads((trained_model_artifact / "metrics.json").read_text())
    fresh = summarize(scored, threshold)

    assert metrics["threshold"] == pytest.approx(threshold)
    for key in ("tp", "fp", "fn", "tn"):
        # Batch composition may move a score at the 1e-6 level: allow one message either way.
        assert abs(metrics["test"]["overall"][key] - fresh["overall"][key]) <= 1, key
    novel = metrics["test_novel_phrasing"]["overall"]
    assert novel["positives"] > 0 and novel["recall"] is not None  # reported, whatever it is


def test_the_training_record_says_how_long_the_plan_took_and_the_report_prints_it(trained_model_artifact):
    # The 10-minute training bar is a figure of `train_classifier`'s report (README, "The model"),
    # not a clock in a test: the suite trains this model beside other tests in parallel.
    metrics = json.loads((trained_model_artifact / "metrics.json").read_text())
    training = metrics["training"]
    assert training["seconds"] > 0 and training["epochs_run"] == training["epochs_planned"], _training_record(
        trained_model_artifact
    )
    assert f"trained in {training['seconds']:.0f} s ({training['epochs_run']} of" in format_report(metrics)
