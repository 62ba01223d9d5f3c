"""Integrated Gradients, occlusion, word merging and offsets, the driving window, attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from explanations.attribution import BFLOAT16, FLOAT32, integrated_gradients, merge_to_words, occlusion
from explanations.engine import MessageToExplain, explained_spans
from explanations.faithfulness import IG_DELTA_TOLERANCE, CheckInput, batch_faithfulness_checks
from explanations.model_attention import attention_maps
from explanations.model_io import (
    ExplainedSpan,
    bf16_twin,
    claim_scores,
    encode,
    explained_span,
    scorer_windows,
    token_to_word,
    widen_to_words,
)
from explanations.words import split_words
from scoring.errors import DeviceOutOfMemory
from scoring.segmentation import Segment

CLAIM = "Your returns are guaranteed at 8 percent every year, so sign today."
NEUTRAL = "The meeting notes from the quarterly review are attached for the whole team to read. "


def whole(text: str) -> ExplainedSpan:
    return ExplainedSpan(0, len(text), text, tuple(split_words(text)), 0, 1)


# --- Integrated Gradients ---------------------------------------------------------------------------


def test_integrated_gradients_is_complete_on_the_tiny_model(tiny_scorer):
    # given a text the tiny model scores far from its [PAD] baseline (which the tiny model, trained
    # from scratch, scores as a claim: its neutral text is the one far from it)
    span = whole(NEUTRAL)
    # when
    (attribution,) = integrated_gradients(tiny_scorer, [span], n_steps=32, precision=FLOAT32)
    # then the attributions add up to F(x) - F(baseline), up to a small convergence delta
    gap = attribution.score - attribution.baseline_score
    assert abs(gap) > 0.05
    assert abs(attribution.convergence_delta) < 0.02 * abs(gap) + 1e-4
    total = attribution.scores.sum() + attribution.unassigned
    assert total == pytest.approx(gap + attribution.convergence_delta, abs=1e-5)


def test_more_steps_do_not_make_the_convergence_delta_worse(tiny_scorer):
    span = whole(CLAIM)
    (coarse,) = integrated_gradients(tiny_scorer, [span], n_steps=4, precision=FLOAT32)
    (fine,) = integrated_gradients(tiny_scorer, [span], n_steps=64, precision=FLOAT32)
    assert abs(fine.convergence_delta) <= abs(coarse.convergence_delta) + 1e-6


def test_a_batch_gives_each_message_the_attribution_it_gets_alone(tiny_scorer):
    # given messages of very different lengths (so the short ones are padded in the batch)
    texts = [CLAIM, "Guaranteed delivery, fast.", NEUTRAL * 3 + "This stock will double by March."]
    spans = [whole(t) for t in texts]
    # when
    together = integrated_gradients(tiny_scorer, spans, n_steps=16, precision=FLOAT32)
    alone = [integrated_gradients(tiny_scorer, [s], n_steps=16, precision=FLOAT32)[0] for s in spans]
    # then padding is masked: the same numbers either way
    for a, b in zip(together, alone, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, atol=2e-5)
        assert a.score == pytest.approx(b.score, abs=1e-5)
        assert a.convergence_delta == pytest.approx(b.convergence_delta, abs=2e-5)


def test_bfloat16_gradients_rank_the_words_as_float32_does(tiny_scorer):
    spans = [whole(CLAIM), whole(NEUTRAL + "This stock will double by March, guaranteed.")]
    exact = integrated_gradients(tiny_scorer, spans, n_steps=16, precision=FLOAT32)
    rounded = integrated_gradients(tiny_scorer, spans, n_steps=16, precision=BFLOAT16)
    for a, b in zip(exact, rounded, strict=True):
        assert (a.precision, b.precision) == (FLOAT32, BFLOAT16)
        # F(x) and F(baseline) are float32 either way; only the path's gradients are rounded
        assert (b.score, b.baseline_score) == pytest.approx((a.score, a.baseline_score), abs=1e-6)
        assert spearmanr(a.scores, b.scores).statistic > 0.9
        assert np.abs(a.scores - b.scores).max() < 0.05
        assert abs(b.convergence_delta - a.convergence_delta) < 0.05


def test_the_bf16_twin_keeps_the_embeddings_in_float32_and_leaves_the_model_alone(tiny_scorer):
    model = tiny_scorer.model

    twin = bf16_twin(model)

    assert bf16_twin(model) is twin  # made once per model
    assert twin is not model and next(model.parameters()).dtype == torch.float32
    assert all(w.dtype == torch.float32 for w in twin.base_model.embeddings.parameters())
    assert all(w.dtype == torch.bfloat16 for w in twin.base_model.encoder.parameters())
    assert not any(w.requires_grad for w in twin.parameters())
    ids = torch.tensor([[101, 2000, 2001, 102]])
    assert twin.base_model.embeddings(input_ids=ids).dtype == torch.bfloat16


def test_unconverged_attributions_are_refined_with_twice_the_steps(tiny_scorer):
    spans = [whole(CLAIM), whole("Guaranteed delivery, fast."), whole(NEUTRAL)]
    plain = integrated_gradients(tiny_scorer, spans, n_steps=2, precision=FLOAT32)
    refined = integrated_gradients(tiny_scorer, spans, n_steps=2, doublings=4, precision=FLOAT32)
    assert all(a.n_steps == 2 for a in plain)
    assert any(abs(a.convergence_delta) > IG_DELTA_TOLERANCE for a in plain)  # something to refine
    for span, before, after in zip(spans, plain, refined, strict=True):
        if abs(before.convergence_delta) <= IG_DELTA_TOLERANCE:
            assert after.n_steps == 2  # converged at once: left alone
            np.testing.assert_allclose(after.scores, before.scores, atol=1e-6)
        else:
            assert after.n_steps in (4, 8, 16, 32)
            assert abs(after.convergence_delta) <= IG_DELTA_TOLERANCE or after.n_steps == 32
            assert abs(after.convergence_delta) < abs(before.convergence_delta)
        # the number it records is the one of the steps it used
        (again,) = integrated_gradients(tiny_scorer, [span], n_steps=after.n_steps, precision=FLOAT32)
        assert again.convergence_delta == pytest.approx(after.convergence_delta, abs=1e-5)


def test_ig_refuses_a_wrong_precision_or_negative_doublings(tiny_scorer):
    # (how "auto" resolves on each device: tests/scoring/classifier/test_precision.py)
    with pytest.raises(ValueError, match="float16"):
        integrated_gradients(tiny_scorer, [], precision="float16")
    with pytest.raises(ValueError, match="doublings"):
        integrated_gradients(None, [], doublings=-1)


def test_the_one_word_model_gets_all_its_attribution_on_its_word(one_word):
    text = "We promise the yield is guaranteed for every investor this year."
    (attribution,) = integrated_gradients(one_word, [whole(text)], n_steps=32)
    words = [w.text for w in split_words(text)]
    i = words.index("guaranteed")
    assert attribution.scores[i] == pytest.approx(attribution.score - attribution.baseline_score, abs=0.01)
    assert np.abs(np.delete(attribution.scores, i)).max() < 1e-6


def test_integrated_gradients_leaves_the_model_weights_as_they_were(tiny_scorer):
    before = [p.requires_grad for p in tiny_scorer.model.parameters()]
    integrated_gradients(tiny_scorer, [whole(CLAIM)], n_steps=4)
    assert [p.requires_grad for p in tiny_scorer.model.parameters()] == before
    assert all(p.grad is None for p in tiny_scorer.model.parameters())


# --- the check on a model whose answer is known ------------------------------------------------------


def test_on_the_one_word_model_ig_and_occlusion_pass_and_random_words_fail(one_word):
    # given twenty-word messages where only 'guaranteed' matters
    rng = np.random.default_rng(7)
    filler = ["please", "review", "the", "attached", "quarterly", "letter", "and", "call", "me", "back"]
    texts = []
    for _ in range(12):
        words = list(rng.choice(filler, size=19))
        words.insert(int(rng.integers(0, 20)), "guaranteed")
        texts.append(" ".join(words) + ".")
    spans = [whole(t) for t in texts]
    score_fn = lambda batch: claim_scores(one_word, batch)  # noqa: E731

    def check(scores_per_text):
        items = [
            CheckInput(text=s.text, words=s.words, scores=list(map(float, sc)), threshold=0.5)
            for s, sc in zip(spans, scores_per_text, strict=True)
        ]
        return batch_faithfulness_checks(items, score_fn, seed=0)

    # when
    ig = check([a.scores for a in integrated_gradients(one_word, spans, n_steps=32)])
    occ = check([a.scores for a in occlusion(score_fn, spans)])
    random = check([rng.random(len(s.words)) for s in spans])
    # then the attributions that name the word flip every decision; random words do not
    assert all(r.passed and r.flipped for r in ig)
    assert all(r.passed and r.flipped for r in occ)
    assert all(r.top_words[0].text == "guaranteed" for r in ig + occ)
    random_pass = np.mean([r.passed for r in random])
    assert random_pass <= 0.34  # passes only when the draw happens to include the word
    assert all(r.passed == ("guaranteed" in [w.text for w in r.top_words]) for r in random)


# --- occlusion ----------------------------------------------------------------------------------------


def test_occlusion_is_the_drop_when_each_word_is_deleted_in_one_scoring_call(one_word):
    calls = []

    def score_fn(texts):
        calls.append(list(texts))
        return claim_scores(one_word, texts)

    texts = ["Returns guaranteed.", "The SEC filing is attached, guaranteed delivery."]
    results = occlusion(score_fn, [whole(t) for t in texts])
    assert len(calls) == 1
    for text, result in zip(texts, results, strict=True):
        words = [w.text for w in split_words(text)]
        expected = [result.score - claim_scores(one_word, [text.replace(w, "", 1)])[0] for w in words]
        assert result.scores == pytest.approx(expected, abs=1e-6)
        assert result.scores[words.index("guaranteed")] > 0.9


def test_an_empty_text_is_scored_as_the_model_sees_cls_and_sep(tiny_scorer):
    tokenizer = tiny_scorer.tokenizer
    expected = tiny_scorer.window_probabilities([[tokenizer.cls_token_id, tokenizer.sep_token_id]])[
        0, 1:
    ].sum()
    assert claim_scores(tiny_scorer, ["", "   "]) == pytest.approx([expected, expected], abs=1e-7)


# --- words and offsets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Unbelievably guaranteed, non-negotiable returns!!!",
        "A risk-free $200 bond pays 8% (really) — can't lose.",
        "Café naïve façade: le rendement est garanti à 100 %.",
        "保证收益 guaranteed 🚀🚀 returns",
        "  leading spaces and\ttabs\nnewlines  ",
    ],
)
def test_subword_tokens_merge_into_the_words_of_split_words(tiny_scorer, text):
    (encoded,) = encode(tiny_scorer.tokenizer, [text], max_tokens=512)
    words = split_words(text)
    owner = token_to_word(encoded, words)
    # every token of a word lies inside it, every word gets at least one token
    for (start, end), i in zip(encoded.offsets, owner, strict=True):
        if i is not None:
            assert words[i].start <= start < end <= words[i].end
    assert set(range(len(words))) <= {i for i in owner if i is not None}
    # the merged scores are sums over each word's tokens; the rest is unassigned
    token_scores = np.arange(1, len(owner) + 1, dtype=float)
    merged, unassigned = merge_to_words(token_scores, owner, len(words))
    assert merged.sum() + unassigned == pytest.approx(token_scores.sum())
    for i in range(len(words)):
        assert merged[i] == pytest.approx(sum(s for s, o in zip(token_scores, owner, strict=True) if o == i))


def test_tokens_outside_every_word_are_unassigned(tiny_scorer):
    text = "guaranteed 🚀 !!"
    (encoded,) = encode(tiny_scorer.tokenizer, [text], max_tokens=512)
    owner = token_to_word(encoded, split_words(text))
    assert owner[0] is None and owner[-1] is None  # [CLS], [SEP]
    assert owner.count(0) >= 1 and owner.count(None) == len(owner) - owner.count(0)


def test_a_window_edge_inside_a_word_is_widened_to_the_whole_word():
    body = "alpha unguaranteeable omega"
    assert widen_to_words(body, 8, 15) == (6, 21)
    assert widen_to_words(body, 0, 3) == (0, 5)
    assert widen_to_words(body, 5, 6) == (5, 6)  # only the space: nothing to widen


# --- the window that drove the score --------------------------------------------------------------------


def long_message() -> tuple[str, int]:
    body = NEUTRAL * 3 + "Your capital is guaranteed by us. " + NEUTRAL * 3
    return body, body.index("guaranteed")


def test_a_long_message_is_explained_on_the_window_that_drove_its_score(one_word):
    # given a message many windows long, with the only claim word in the middle
    body, at = long_message()
    windows = scorer_windows(one_word, [body])[0]
    assert len(windows) > 4
    # when no prediction says which window drove the score
    (span,) = explained_spans(one_word, [MessageToExplain(body, 0.5)])
    # then the windows are scored again and the best one (holding the word) is explained
    assert span.start <= at < span.end
    assert windows[span.window_index].start <= at < windows[span.window_index].end
    assert span.text == body[span.start : span.end]
    # and every word offset, shifted back, lands on the word in the body
    for word in span.words:
        assert body[span.start + word.start : span.start + word.end] == word.text
    (attribution,) = integrated_gradients(one_word, [span], n_steps=16)
    top = span.words[int(np.argmax(attribution.scores))]
    assert (span.start + top.start, span.start + top.end) == (at, at + len("guaranteed"))


def test_the_window_named_by_the_prediction_is_the_one_explained(one_word):
    body, _ = long_message()
    windows = scorer_windows(one_word, [body])[0]
    # a prediction whose (recorded) best window is the last one
    recorded = [(w.start, w.end, 0.1) for w in windows]
    recorded[-1] = (windows[-1].start, windows[-1].end, 0.9)
    (span,) = explained_spans(one_word, [MessageToExplain(body, 0.5, window_scores=recorded)])
    assert span.window_index == len(windows) - 1
    assert span.start <= windows[-1].start and windows[-1].end <= span.end


def test_a_window_list_that_does_not_match_the_scorer_is_not_trusted(one_word):
    body, at = long_message()
    (span,) = explained_spans(one_word, [MessageToExplain(body, 0.5, window_scores=[(0, len(body), 0.9)])])
    assert span.start <= at < span.end


def test_an_attachment_that_drove_the_score_is_explained_not_the_body(one_word):
    """Under a reply's header block segmentation alone reads everything as quoted history; the
    prediction knew the text after it is an attachment (scoring.services.context), which routes."""
    body = (
        "Hello Claire, see the note.\n\nFrom: Ann <a@x.example>\nSent: Monday\nTo: Bob\nSubject: q\n\n"
        "Is it safe?\n\n[Attachment: a.txt · text/plain · 20 bytes]\nReturns are guaranteed."
    )
    at = body.index("[Attachment")
    parts = [Segment("body", 0, 27), Segment("quoted", 29, at - 2), Segment("attachment", at, len(body))]

    (alone,) = explained_spans(one_word, [MessageToExplain(body, 0.5)])
    (with_parts,) = explained_spans(one_word, [MessageToExplain(body, 0.5, segments=parts)])

    assert "guaranteed" not in alone.text  # the body's window, not what drove the score
    assert "guaranteed" in with_parts.text and with_parts.start >= at


def test_a_text_without_words_has_no_span_to_explain(one_word):
    (reason,) = explained_spans(one_word, [MessageToExplain("!!! 🚀 ...", 0.5)])
    assert isinstance(reason, str) and "no words" in reason


def test_explained_span_refuses_a_window_that_does_not_exist(one_word):
    windows = scorer_windows(one_word, ["short text"])[0]
    with pytest.raises(ValueError, match="does not exist"):
        explained_span("short text", windows, 3)


# --- attention (a diagnostic) ------------------------------------------------------------------------------


def test_attention_maps_exclude_padding_and_rows_sum_to_one(tiny_scorer):
    spans = [whole(CLAIM), whole("Returns guaranteed.")]
    together = attention_maps(tiny_scorer, spans)
    alone = attention_maps(tiny_scorer, spans[1:])[0]
    short = together[1]
    n = len(short.tokens)
    assert short.tokens[0] == "[CLS]" and short.tokens[-1] == "[SEP]" and "[PAD]" not in short.tokens
    config = tiny_scorer.model.config
    assert short.weights.shape == (config.num_hidden_layers, config.num_attention_heads, n, n)
    np.testing.assert_allclose(short.weights.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(short.rollout.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(short.weights, alone.weights, atol=1e-5)
    words = short.cls_row_word_scores(2)
    assert words.shape == (2,) and (words >= 0).all()


def test_attention_maps_restore_the_scoring_attention_implementation(tiny_scorer):
    before = tiny_scorer.model.config._attn_implementation
    attention_maps(tiny_scorer, [whole(CLAIM)])
    assert tiny_scorer.model.config._attn_implementation == before


def test_out_of_device_memory_ig_uses_smaller_passes_and_groups_with_the_same_attributions(
    tiny_scorer, monkeypatch
):
    spans = [whole(CLAIM), whole("Guaranteed delivery, fast."), whole(NEUTRAL + "It will double by March.")]
    expected = integrated_gradients(tiny_scorer, spans, n_steps=8, precision=FLOAT32)
    model = tiny_scorer.model
    original = model.forward
    widest = []

    def forward(*args, **kwargs):
        rows = kwargs["input_ids"].shape[0] if "input_ids" in kwargs else args[0].shape[0]
        if torch.is_grad_enabled() and rows > 8:  # IG's passes only; F(x), F(baseline) fit
            widest.append(rows)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", forward)
    got = integrated_gradients(tiny_scorer, spans, n_steps=8, precision=FLOAT32)

    assert widest, "a pass was too big and was made smaller"
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a.scores, b.scores, atol=2e-5)


def test_ig_of_a_text_that_never_fits_is_a_retryable_out_of_memory_error(tiny_scorer, monkeypatch):
    original = tiny_scorer.model.forward

    def forward(*args, **kwargs):
        if torch.is_grad_enabled():
            raise torch.OutOfMemoryError("CUDA out of memory.")
        return original(*args, **kwargs)

    monkeypatch.setattr(tiny_scorer.model, "forward", forward)
    with pytest.raises(DeviceOutOfMemory, match="does not fit"):
        integrated_gradients(tiny_scorer, [whole(CLAIM)], n_steps=4, precision=FLOAT32)
