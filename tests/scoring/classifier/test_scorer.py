import copy
import json
import math
import shutil

import numpy as np
import pytest
import torch

from scoring.classifier.artifacts import MANIFEST_NAME
from scoring.classifier.scorer import Scorer, ScoreResult
from scoring.constants import CLAIM_TYPE_CODES, CLASS_LABELS
from scoring.errors import DeviceOutOfMemory, ModelNotReady, ScoringInputError

NEUTRAL = "The quarterly meeting notes are attached and the agenda covers the office move. "
TEXTS = [
    "Your returns are guaranteed.",
    NEUTRAL * 6 + "This fund will double by March. " + NEUTRAL * 3,
    "ok",
    NEUTRAL * 2,
]


def test_scores_are_one_minus_p_no_claim_of_the_best_window_and_the_max_over_windows(tiny_scorer):
    results = tiny_scorer.score(TEXTS)

    for result in results:
        assert isinstance(result, ScoreResult)
        scores = [w.score for w in result.windows]
        assert result.score == pytest.approx(max(scores))
        assert result.windows[result.best_window].score == result.score
        assert result.score == pytest.approx(1 - result.probabilities["no_claim"], abs=1e-6)
        assert list(result.probabilities) == list(CLASS_LABELS)
        assert sum(result.probabilities.values()) == pytest.approx(1.0, abs=1e-5)
        assert result.claim_type in CLAIM_TYPE_CODES
        best = result.probabilities
        assert result.claim_type == max(CLAIM_TYPE_CODES, key=best.__getitem__)
    assert len(results[1].windows) > 3


def test_with_a_length_penalty_a_message_of_n_routing_windows_is_discounted_by_its_ln_n(tiny_scorer):
    discounted = copy.copy(tiny_scorer)
    discounted.length_penalty = 0.7
    plain, results = tiny_scorer.score(TEXTS), discounted.score(TEXTS)

    for before, after in zip(plain, results, strict=True):
        n = sum(1 for w in after.windows if w.routes)
        odds = math.log(before.score / (1 - before.score)) - 0.7 * math.log(n)
        assert after.score == pytest.approx(1 / (1 + math.exp(-odds)), abs=1e-6)
        # the windows, the best window and the type are the model's: only the message score moves
        assert [w.score for w in after.windows] == [w.score for w in before.windows]
        assert (after.best_window, after.claim_type) == (before.best_window, before.claim_type)
    assert results[0].score == pytest.approx(plain[0].score)  # one window: nothing to discount
    assert results[1].score < plain[1].score
    assert discounted.claim_scores(TEXTS) == pytest.approx([r.score for r in results], abs=1e-6)


def test_the_artifact_s_length_penalty_is_read_and_a_negative_one_refused(tiny_encoder_dir, tmp_path):
    artifact = tmp_path / "artifact"
    shutil.copytree(tiny_encoder_dir, artifact)
    (artifact / MANIFEST_NAME).write_text(json.dumps({"length_penalty": 0.4}))
    assert Scorer(artifact, device="cpu", window_tokens=16, stride=6).length_penalty == 0.4
    (artifact / MANIFEST_NAME).write_text(json.dumps({"length_penalty": -1}))
    with pytest.raises(ValueError, match="length_penalty"):
        Scorer(artifact, device="cpu", window_tokens=16, stride=6)


def test_every_window_score_is_the_score_of_its_own_text_span(tiny_scorer):
    text = TEXTS[1]

    [result] = tiny_scorer.score([text])

    for window in result.windows:
        [alone] = tiny_scorer.claim_scores([text[window.start : window.end]])
        assert alone == pytest.approx(window.score, abs=1e-5)


def test_results_come_back_in_input_order(tiny_scorer):
    together = tiny_scorer.claim_scores(TEXTS)
    one_by_one = [tiny_scorer.claim_scores([text])[0] for text in TEXTS]
    reversed_ = tiny_scorer.claim_scores(TEXTS[::-1])[::-1]

    assert together == pytest.approx(one_by_one, abs=1e-5)
    assert together == pytest.approx(reversed_, abs=1e-5)
    assert len(set(np.round(together, 6))) > 1  # the texts really score differently


def test_the_fast_path_agrees_with_the_full_scores(tiny_scorer):
    assert tiny_scorer.claim_scores(TEXTS) == pytest.approx(
        [r.score for r in tiny_scorer.score(TEXTS)], abs=1e-6
    )


def test_batches_never_exceed_the_token_budget(tiny_scorer, monkeypatch):
    shapes = []
    original = tiny_scorer.model.forward

    def recording_forward(*args, **kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))
        return original(*args, **kwargs)

    monkeypatch.setattr(tiny_scorer.model, "forward", recording_forward)
    tiny_scorer.score(TEXTS * 5)

    assert len(shapes) > 1
    assert all(rows * length <= tiny_scorer.token_budget for rows, length in shapes)


def test_identical_windows_run_once(tiny_scorer, monkeypatch):
    rows_run = []
    original = tiny_scorer.model.forward

    def counting_forward(*args, **kwargs):
        rows_run.append(kwargs["input_ids"].shape[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(tiny_scorer.model, "forward", counting_forward)
    scores = tiny_scorer.claim_scores(["Returns are guaranteed."] * 10)

    assert sum(rows_run) == 1
    assert len(set(scores)) == 1


def test_an_empty_batch_gives_no_results(tiny_scorer):
    assert tiny_scorer.score([]) == []
    assert tiny_scorer.claim_scores([]) == []


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("", "nothing to score"),
        ("   \n\t  ", "nothing to score"),
        ("\x00\x01\x07\u200b", "nothing to score"),
        ("ok \ud800 ok", "not valid Unicode"),
        (None, "must be a string"),
        (b"bytes", "must be a string"),
    ],
)
def test_refused_input_is_a_clear_error_naming_the_text(tiny_scorer, bad, message):
    with pytest.raises(ScoringInputError, match=message) as caught:
        tiny_scorer.score(["fine text", bad])

    assert caught.value.index == 1
    assert message in caught.value.reason


class _Untouchable:
    """A tokenizer that fails the test when anything uses it."""

    def __getattr__(self, name):
        raise AssertionError(f"the tokenizer was used ({name})")

    def __call__(self, *args, **kwargs):
        raise AssertionError("the tokenizer was called")


def test_a_text_over_the_character_limit_is_refused_before_it_is_tokenised(tiny_scorer, monkeypatch):
    # Refused on its length alone (bounded time whatever the size): the tokenizer never sees it.
    monkeypatch.setattr(tiny_scorer, "tokenizer", _Untouchable())
    with pytest.raises(ScoringInputError, match="limit is 5,000"):
        tiny_scorer.claim_scores(["a" * 1_000_000])


def test_a_single_string_instead_of_a_list_is_refused(tiny_scorer):
    with pytest.raises(ScoringInputError, match="sequence of texts"):
        tiny_scorer.score("Your returns are guaranteed.")


def test_emoji_only_text_is_scored(tiny_scorer):
    [result] = tiny_scorer.score(["🚀🚀🚀 💰💰"])

    assert 0.0 <= result.score <= 1.0
    assert len(result.windows) == 1


def test_control_characters_inside_text_do_not_break_offsets(tiny_scorer):
    text = "Returns\x00 are\x07 guaranteed\u200b."

    [result] = tiny_scorer.score([text])

    assert result.windows[0].start == 0 and result.windows[0].end == len(text)


def test_refusal_reason_lets_a_caller_filter_a_batch_first(tiny_scorer):
    assert tiny_scorer.refusal_reason("A real message.") is None
    assert "nothing to score" in tiny_scorer.refusal_reason(" ")


def test_a_folder_without_a_model_is_not_ready(tmp_path):
    with pytest.raises(ModelNotReady, match="No classifier artifact"):
        Scorer(tmp_path)


def test_asking_for_cuda_without_a_gpu_is_a_clear_error(tiny_encoder_dir):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ModelNotReady, match="no CUDA GPU"):
        Scorer(tiny_encoder_dir, device="cuda")


def test_a_token_budget_smaller_than_a_window_is_refused(tiny_encoder_dir):
    with pytest.raises(ValueError, match="token_budget"):
        Scorer(tiny_encoder_dir, device="cpu", window_tokens=128, token_budget=64)


def test_the_scorer_runs_on_cpu_in_fp32_without_gradients(tiny_scorer):
    import torch

    assert tiny_scorer.device == torch.device("cpu")
    assert next(tiny_scorer.model.parameters()).dtype == torch.float32
    assert not tiny_scorer.model.training


# --- device memory and overlapped tokenisation (GPU workers; exercised here on the CPU) ---------


def _rows_over(limit, original, seen):
    def forward(*args, **kwargs):
        rows = kwargs["input_ids"].shape[0]
        seen.append(rows)
        if rows > limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(*args, **kwargs)

    return forward


def test_a_batch_that_runs_out_of_device_memory_is_halved_until_it_fits(tiny_scorer, monkeypatch):
    texts = [f"{NEUTRAL} item {i}: returns are guaranteed" for i in range(12)]
    expected = tiny_scorer.score(texts)
    seen: list[int] = []
    monkeypatch.setattr(tiny_scorer.model, "forward", _rows_over(1, tiny_scorer.model.forward, seen))

    results = tiny_scorer.score(texts)

    assert max(seen) > 1 and 1 in seen  # a real batch failed, and single windows ran
    assert [r.score for r in results] == pytest.approx([r.score for r in expected], abs=1e-6)
    assert [r.claim_type for r in results] == [r.claim_type for r in expected]


def test_a_window_that_does_not_fit_alone_is_a_retryable_error_not_a_verdict(tiny_scorer, monkeypatch):
    seen: list[int] = []
    monkeypatch.setattr(tiny_scorer.model, "forward", _rows_over(0, tiny_scorer.model.forward, seen))

    with pytest.raises(DeviceOutOfMemory, match="does not fit"):
        tiny_scorer.score(["Your returns are guaranteed."])
    assert not isinstance(DeviceOutOfMemory("x"), ScoringInputError)


def test_overlapped_tokenisation_gives_the_same_results_in_the_same_order(tiny_encoder_dir):
    options = {"device": "cpu", "window_tokens": 16, "stride": 6, "token_budget": 32, "max_chars": 5000}
    plain = Scorer(tiny_encoder_dir, overlap=False, **options)
    overlapped = Scorer(tiny_encoder_dir, overlap=True, **options)
    texts = TEXTS * 4
    assert sum(map(len, texts)) > 3 * 4 * 32  # several chunks of about one forward budget

    a, b = plain.score(texts), overlapped.score(texts)

    assert [r.score for r in b] == pytest.approx([r.score for r in a], abs=1e-6)
    assert [(w.start, w.end) for r in b for w in r.windows] == [
        (w.start, w.end) for r in a for w in r.windows
    ]
    assert Scorer(tiny_encoder_dir, **options).overlap is False  # on a CPU it is off by default


def test_overlapped_scoring_names_a_refused_text_by_its_place_in_the_whole_batch(tiny_encoder_dir):
    scorer = Scorer(
        tiny_encoder_dir,
        device="cpu",
        window_tokens=16,
        stride=6,
        token_budget=32,
        max_chars=5000,
        overlap=True,
    )
    texts = [NEUTRAL * 2] * 6 + ["\u0301\u0301"]  # combining accents only: no token, refused when reached

    with pytest.raises(ScoringInputError) as refused:
        scorer.score(texts)
    assert refused.value.index == 6
