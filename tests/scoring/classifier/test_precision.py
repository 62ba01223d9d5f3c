"""The number format of the model (scoring.classifier.precision) and the Scorer's float32
re-check of bfloat16 windows near a decision."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import scoring.classifier.precision as precision_module
from scoring.classifier.precision import AUTO, BFLOAT16, FLOAT32, autocast, resolve_precision
from scoring.classifier.scorer import RECHECK_MARGIN, Scorer, claim_log_odds, log_odds
from scoring.classifier.windows import Window

TEXTS = [
    "Guaranteed returns of 12% a year, zero risk, the SEC approved it.",
    "Your parcel has guaranteed delivery by Friday.",
    "lol this fund will double by march trust me",
    "The quarterly report is attached; please read it before the meeting on Monday.",
    "Risk-free trial for thirty days, cancel any time.",
    "We cannot guarantee returns; past performance is no guide to the future.",
]
WORDS = [
    "guaranteed",
    "returns",
    "risk",
    "free",
    "double",
    "march",
    "sec",
    "approved",
    "parcel",
    "delivery",
    "trial",
    "fund",
    "lol",
]
TEXTS += [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6)) for i in range(30)]
WEIGHT_STD = 0.5


def test_auto_is_bfloat16_only_where_the_cpu_has_bf16_instructions(monkeypatch):
    assert resolve_precision(FLOAT32, "cpu") == FLOAT32
    assert resolve_precision(BFLOAT16, "cpu") == BFLOAT16
    monkeypatch.setattr(precision_module, "_cpu_has_bf16_instructions", lambda: True)
    assert resolve_precision(AUTO, "cpu") == BFLOAT16
    monkeypatch.setattr(precision_module, "_cpu_has_bf16_instructions", lambda: False)
    assert resolve_precision(AUTO, "cpu") == FLOAT32
    with pytest.raises(ValueError, match="float16"):
        resolve_precision("float16", "cpu")


def test_a_gpu_that_only_emulates_bf16_computes_in_float32(monkeypatch):
    """A T4 or V100: torch's is_bf16_supported() says yes by default (emulation); auto must not
    pick bf16 there, and the question is asked of the scorer's own device."""
    asked: list[tuple[object, bool]] = []
    current: list[object] = []

    class Device:
        def __init__(self, device):
            self.device = device

        def __enter__(self):
            current.append(self.device)

        def __exit__(self, *exc):
            current.pop()

    def is_bf16_supported(including_emulation=True):
        asked.append((current[-1] if current else None, including_emulation))
        return including_emulation  # emulated only

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device", Device)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
    assert resolve_precision(AUTO, "cuda:1") == FLOAT32
    assert asked == [(torch.device("cuda:1"), False)]
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert resolve_precision(AUTO, "cuda:1") == BFLOAT16
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_precision(AUTO, "cuda") == FLOAT32


def test_autocast_needs_a_resolved_precision():
    with autocast("cpu", FLOAT32):
        assert torch.ones(2, 2).matmul(torch.ones(2, 2)).dtype == torch.float32
    with autocast("cpu", BFLOAT16):
        assert torch.ones(2, 2).matmul(torch.ones(2, 2)).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="resolved"):
        autocast("cpu", AUTO)


def test_claim_log_odds_are_the_scores_log_odds():
    probabilities = np.array(
        [[0.9, 0.05, 0.05, 0.0, 0.0], [1e-6, 0.5, 0.5 - 1e-6, 0.0, 0.0]], dtype=np.float32
    )

    odds = claim_log_odds(probabilities)

    assert odds[0] == pytest.approx(log_odds(0.1), abs=1e-5)
    assert odds[1] == pytest.approx(math.log((1 - 1e-6) / 1e-6), abs=1e-3)
    assert log_odds(0.0) == -math.inf and log_odds(1.0) == math.inf


def _row(claim_odds: float, split: tuple[float, float] = (1.0, 0.0)) -> list[float]:
    """Class probabilities with the given claim log-odds, the claim mass split over two types."""
    claim = 1 / (1 + math.exp(-claim_odds))
    return [1 - claim, claim * split[0], claim * split[1], 0.0, 0.0]


def test_only_windows_near_a_threshold_or_a_flagged_type_tie_are_rechecked(tiny_encoder_dir):
    # given a Scorer that decides at 0.9 (log-odds 2.197)
    scorer = Scorer(tiny_encoder_dir, device="cpu", precision=BFLOAT16)
    scorer.watch_threshold(0.9)
    at = log_odds(0.9)
    rows = np.array(
        [
            _row(at + RECHECK_MARGIN / 2),  # just above the threshold
            _row(at - RECHECK_MARGIN / 2),  # just below
            _row(at + 3),  # clearly flagged, one claim type
            _row(at - 6),  # clearly clear
            _row(at + 3, split=(0.5, 0.5)),  # clearly flagged, two claim types tied
            _row(at - 6, split=(0.5, 0.5)),  # clearly clear, tied types: the type decides nothing
        ],
        dtype=np.float32,
    )

    near = scorer._near_decision(rows)

    assert near.tolist() == [True, True, False, False, True, False]


def test_with_a_length_penalty_windows_near_the_shifted_decision_point_are_rechecked(tiny_encoder_dir):
    # given a Scorer deciding at 0.9 whose messages of 4 windows are discounted by 0.5 * ln 4
    scorer = Scorer(tiny_encoder_dir, device="cpu", precision=BFLOAT16)
    scorer.watch_threshold(0.9)
    shift = 0.5 * math.log(4)
    rows = np.array([_row(log_odds(0.9) + shift), _row(log_odds(0.9) + shift + 6)], dtype=np.float32)

    # a window at the shifted point decides a 4-window message: rechecked; far from it: not
    assert scorer._near_decision(rows, shifts=[0.0, shift]).tolist() == [True, False]
    assert scorer._near_decision(rows).tolist() == [False, False]


def test_near_equal_windows_of_two_claim_types_in_a_flagged_message_are_rechecked(tiny_encoder_dir):
    # given a Scorer deciding at 0.9, and three messages of two routing windows each: the first
    # flagged by two near-equal windows of different types, the second by two near-equal windows
    # of one type, the third by two near-equal windows of different types far below the threshold
    scorer = Scorer(tiny_encoder_dir, device="cpu", precision=BFLOAT16)
    scorer.watch_threshold(0.9)
    at = log_odds(0.9)
    rows = np.array(
        [
            _row(at + 3, split=(1.0, 0.0)),
            _row(at + 3 - RECHECK_MARGIN / 4, split=(0.0, 1.0)),
            _row(at + 3, split=(1.0, 0.0)),
            _row(at + 3 - RECHECK_MARGIN / 4, split=(1.0, 0.0)),
            _row(at - 6, split=(1.0, 0.0)),
            _row(at - 6 - RECHECK_MARGIN / 4, split=(0.0, 1.0)),
        ],
        dtype=np.float32,
    )
    per_text = [[Window(n, (101, 102), 0, 1), Window(n, (101, 103), 2, 3)] for n in range(3)]

    rivals = scorer._rival_windows(per_text, rows, np.array([0, 2, 4, 6]))

    # then which window is best, and so the claim type, is float32's only where it matters
    assert rivals == [0, 1]
    # and a window that does not route never competes
    quoted = [[Window(0, (101, 102), 0, 1), Window(0, (101, 103), 2, 3, kind="quoted", routes=False)]]
    assert scorer._rival_windows(quoted, rows[:2], np.array([0, 2])) == []


def test_without_a_threshold_nothing_is_rechecked(tiny_encoder_dir):
    scorer = Scorer(tiny_encoder_dir, device="cpu", window_tokens=16, stride=6, precision=BFLOAT16)

    scorer.score(TEXTS)

    assert scorer.decision_thresholds == []
    assert scorer.recheck_counts["rechecked"] == 0
    assert scorer.recheck_counts["windows"] > 0


def test_bfloat16_decisions_and_claim_types_are_float32_ones(tiny_encoder_dir):
    # given a float32 Scorer and a bf16 Scorer on the same model (the tiny model's matrices
    # re-drawn wider, so that its scores spread out), deciding at the median score
    exact = Scorer(tiny_encoder_dir, device="cpu", window_tokens=16, stride=6, precision=FLOAT32)
    torch.manual_seed(0)
    with torch.no_grad():
        for weight in exact.model.parameters():
            if weight.dim() == 2:
                weight.normal_(0.0, WEIGHT_STD)
    reference = exact.score(TEXTS)
    threshold = float(np.median([r.score for r in reference]))
    fast = exact.with_precision(BFLOAT16)
    fast.watch_threshold(threshold)

    # when
    results = fast.score(TEXTS)

    # then every message is flagged and typed as in float32, some windows were re-scored in
    # float32 (their numbers are float32's exactly) and the rest stayed bf16, close to float32
    assert [r.score >= threshold for r in results] == [r.score >= threshold for r in reference]
    flagged = [i for i, r in enumerate(reference) if r.score >= threshold]
    assert [results[i].claim_type for i in flagged] == [reference[i].claim_type for i in flagged]
    assert 0 < fast.recheck_counts["rechecked"] < fast.recheck_counts["windows"]
    windows = [
        (w.score, v.score)
        for r, q in zip(results, reference, strict=True)
        for w, v in zip(r.windows, q.windows, strict=True)
    ]
    assert any(a == b for a, b in windows)
    assert max(abs(a - b) for a, b in windows) < 0.05
    assert fast.model is exact.model and exact.precision == FLOAT32 and fast.precision == BFLOAT16


def test_the_manifest_threshold_is_a_decision_threshold(tiny_encoder_dir):
    scorer = Scorer(tiny_encoder_dir, device="cpu", precision=BFLOAT16)
    scorer.threshold = 0.7
    scorer.watch_threshold(0.4)
    scorer.watch_threshold(None)

    assert scorer.decision_thresholds == [0.4, 0.7]
    assert scorer.with_precision(FLOAT32).decision_thresholds == [0.4, 0.7]
