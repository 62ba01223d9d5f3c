"""bench_scoring's measurements: the Scorer against transformers' text-classification pipeline.

Both run the same model object on the same texts, in one process, one after the other:
- the Scorer: windows (WINDOW_TOKENS / stride), sorted by length, dynamically padded batches
  under a token budget, identical windows run once, inference_mode, in its precision
  (SCORING_PRECISION: bfloat16 where the device has bf16 matrix units, with the windows near a
  decision re-scored in float32). When that is not float32, the same Scorer is timed again in
  float32 on the same texts, and the report says how far its results are from float32's
  (largest score difference, same flags, same claim types of flagged messages);
- the pipeline with batch_size=1 and with each of 8, 32 and 64 (padding to the longest text of
  each batch, in input order, as the pipeline does), truncating at the model's 512 positions,
  on the model as loaded (float32).

The pipeline reads a text up to 400 tokens in one pass where the Scorer reads 128-token
windows with stride 64 (the way it scores long messages in production): on a long text the
Scorer does about 1.8 times the pipeline's token work. On a CPU the encoder is compute-bound
at every batch size from about 100 tokens up (MiniLM fp32 on 2 cores: ~7,000 tokens/s on an
Intel Xeon, ~5,800 on an AVX2-only AMD EPYC, whether 1 x 400 or 64 x 128), so batching wins by
cutting per-call overhead and padding on the short messages that most traffic is, and cannot
win on a mix of only long ones: the two mixes of `mixed_length_texts` show both cases. The
report gives each side's encoder tokens per message and the hardware. No Django here.
"""

from __future__ import annotations

import random
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from scoring.classifier.precision import BFLOAT16, FLOAT32, autocast, hardware
from scoring.classifier.scorer import Scorer, ScoreResult

PIPELINE_BATCH_SIZES = (8, 32, 64)
MIN_TOKENS, MAX_TOKENS = 10, 400
GPU_TOKENS = 64
MIXES = ("corpus", "uniform")


@dataclass(frozen=True)
class Timing:
    msgs_per_s: float
    seconds: float


def peak_rss_mb() -> float:
    """The process's peak resident set size so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _cut(tokenizer, text: str, tokens: int) -> str:
    """`text` up to the end of its `tokens`-th token (the whole text when it is shorter)."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return text if len(offsets) <= tokens else text[: offsets[tokens - 1][1]]


def mixed_length_texts(
    bodies: Sequence[str],
    tokenizer,
    n: int,
    *,
    mix: str = "corpus",
    min_tokens: int = MIN_TOKENS,
    max_tokens: int = MAX_TOKENS,
    seed: int = 0,
) -> list[str]:
    """n texts of min_tokens to max_tokens tokens, drawn at random (seeded) from corpus bodies.

    - mix="corpus": the corpus's own length mix (mostly short chat and e-mail lines, a tail of
      long padded messages): bodies shorter than min_tokens are skipped, longer than max_tokens cut;
    - mix="uniform": lengths spread uniformly over the range: bodies joined until long enough,
      then cut at a token boundary (every text long-message work, the CPU's compute-bound case).
    """
    if n < 1 or not bodies:
        raise ValueError("need n >= 1 and at least one body")
    if not 1 <= min_tokens <= max_tokens:
        raise ValueError("need 1 <= min_tokens <= max_tokens")
    if mix not in MIXES:
        raise ValueError(f"mix must be one of {', '.join(MIXES)}")
    rng = random.Random(seed)
    counts = {body: len(tokenizer(body, add_special_tokens=False)["input_ids"]) for body in set(bodies)}
    if mix == "corpus":
        usable = sorted(body for body, count in counts.items() if count >= min_tokens)
        if not usable:
            raise ValueError(f"no body has {min_tokens} tokens or more")
        return [_cut(tokenizer, rng.choice(usable), max_tokens) for _ in range(n)]
    ordered, texts = sorted(counts), []
    for _ in range(n):
        target = rng.randint(min_tokens, max_tokens)
        parts, count = [], 0
        while count < target:
            body = rng.choice(ordered)
            parts.append(body)
            count += counts[body] + 1
        texts.append(_cut(tokenizer, " ".join(parts), target))
    return texts


def timed(run: Callable[[], object], n: int) -> Timing:
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    return Timing(msgs_per_s=n / seconds, seconds=seconds)


def scorer_timing(scorer: Scorer, texts: Sequence[str]) -> tuple[Timing, list[ScoreResult]]:
    scorer.score(texts[: min(16, len(texts))])  # warm-up
    results: list[ScoreResult] = []
    return timed(lambda: results.extend(scorer.score(texts)), len(texts)), results


def agreement(fast: Sequence[ScoreResult], exact: Sequence[ScoreResult], thresholds: Sequence[float]) -> dict:
    """How far the Scorer's results in its precision are from float32's on the same texts: the
    largest score difference, and the share of messages flagged (at every decision threshold)
    and, when flagged, typed as float32 flags and types them."""
    same_flag = [
        (a.score >= t) == (b.score >= t) for t in thresholds for a, b in zip(fast, exact, strict=True)
    ]
    flagged = [(a, b) for t in thresholds for a, b in zip(fast, exact, strict=True) if b.score >= t]
    return {
        "max_abs_score_difference_vs_float32": round(
            max(abs(a.score - b.score) for a, b in zip(fast, exact, strict=True)), 5
        ),
        "same_flag_rate_vs_float32": float(np.mean(same_flag)) if same_flag else None,
        "same_claim_type_of_flagged_rate_vs_float32": (
            float(np.mean([a.claim_type == b.claim_type for a, b in flagged])) if flagged else None
        ),
    }


def hf_pipeline(scorer: Scorer):
    """transformers' text-classification pipeline over the Scorer's own model and tokenizer."""
    from transformers import pipeline

    return pipeline(
        "text-classification",
        model=scorer.model,
        tokenizer=scorer.tokenizer,
        device=scorer.device,
        top_k=None,
    )


def pipeline_timing(classify, texts: Sequence[str], batch_size: int, *, progress: bool) -> Timing:
    positions = getattr(classify.model.config, "max_position_embeddings", 512)
    kwargs = {"batch_size": batch_size, "truncation": True, "max_length": min(512, positions)}
    classify(list(texts[: min(16, len(texts))]), **kwargs)  # warm-up

    def run():
        with torch.inference_mode():
            for _ in tqdm(
                classify(iter_texts(texts), **kwargs),
                total=len(texts),
                desc=f"pipeline batch_size={batch_size}",
                disable=not progress,
                leave=False,
            ):
                pass

    return timed(run, len(texts))


def iter_texts(texts: Sequence[str]):
    """The texts as a generator: the pipeline streams its results (for the progress bar) only
    when it is given a generator; a list or a plain iterator is run as one call."""
    yield from texts


def gpu_bf16_msgs_per_s(scorer: Scorer, n: int = 65_536, batch_size: int = 1024) -> float:
    """Raw forward throughput on CUDA for 64-token inputs under bf16 autocast (GPU only)."""
    if scorer.device.type != "cuda":
        raise ValueError("the bf16 figure is measured on a CUDA device only")
    vocab = scorer.model.config.vocab_size
    ids = torch.randint(1000, vocab, (batch_size, GPU_TOKENS), device=scorer.device)
    mask = torch.ones_like(ids)
    batches = max(1, n // batch_size)
    with torch.inference_mode(), autocast(scorer.device, BFLOAT16):
        for _ in range(3):
            scorer.model(input_ids=ids, attention_mask=mask)
        torch.cuda.synchronize(scorer.device)
        started = time.perf_counter()
        for _ in range(batches):
            scorer.model(input_ids=ids, attention_mask=mask)
        torch.cuda.synchronize(scorer.device)
    return batches * batch_size / (time.perf_counter() - started)


def compare(scorer: Scorer, texts: Sequence[str], *, mix: str = "", progress: bool = True) -> dict:
    """Every figure bench_scoring prints, measured in this call on `texts`."""
    lengths = [len(scorer.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    scorer_tokens = sum(w.n_tokens for windows in scorer.windows(texts) for w in windows)
    counted = dict(scorer.recheck_counts)
    scorer_run, results = scorer_timing(scorer, texts)
    windows, rechecked = (scorer.recheck_counts[k] - counted[k] for k in ("windows", "rechecked"))
    exact = {}
    if scorer.precision != FLOAT32:
        float32_run, float32_results = scorer_timing(scorer.with_precision(FLOAT32), texts)
        exact = {
            "scorer_float32_msgs_per_s": round(float32_run.msgs_per_s, 1),
            "decision_thresholds": scorer.decision_thresholds,
            "rechecked_window_share": round(rechecked / windows, 4) if windows else 0.0,
            **agreement(results, float32_results, scorer.decision_thresholds),
        }
    classify = hf_pipeline(scorer)
    bs1 = pipeline_timing(classify, texts, 1, progress=progress)
    batched = {bs: pipeline_timing(classify, texts, bs, progress=progress) for bs in PIPELINE_BATCH_SIZES}
    best_bs = max(batched, key=lambda bs: batched[bs].msgs_per_s)
    report = {
        "n": len(texts),
        "mix": mix,
        "tokens_min": min(lengths),
        "tokens_max": max(lengths),
        "tokens_mean": round(sum(lengths) / len(lengths), 1),
        # The encoder's work per message, special tokens included: the pipeline reads each text
        # once (up to 512 positions); the Scorer reads its overlapping windows.
        "pipeline_tokens_per_msg": round(sum(min(n + 2, 512) for n in lengths) / len(lengths), 1),
        "scorer_tokens_per_msg": round(scorer_tokens / len(texts), 1),
        "scorer_msgs_per_s": round(scorer_run.msgs_per_s, 1),
        "scorer_tokens_per_s": round(scorer_tokens / scorer_run.seconds),
        "pipeline_bs1_msgs_per_s": round(bs1.msgs_per_s, 1),
        "pipeline_msgs_per_s_by_batch_size": {str(bs): round(t.msgs_per_s, 1) for bs, t in batched.items()},
        "pipeline_best_batch_size": best_bs,
        "pipeline_best_msgs_per_s": round(batched[best_bs].msgs_per_s, 1),
        "ratio_vs_bs1": round(scorer_run.msgs_per_s / bs1.msgs_per_s, 2),
        "ratio_vs_best": round(scorer_run.msgs_per_s / batched[best_bs].msgs_per_s, 2),
        "scorer_precision": scorer.precision,
        "pipeline_precision": FLOAT32,
        **exact,
        "window_tokens": scorer.window_tokens,
        "stride": scorer.stride,
        "token_budget": scorer.token_budget,
        **hardware(scorer.device),
    }
    if exact:
        report["ratio_float32_vs_bs1"] = round(exact["scorer_float32_msgs_per_s"] / bs1.msgs_per_s, 2)
    if scorer.device.type == "cuda":
        report["gpu_bf16_64_token_msgs_per_s"] = round(gpu_bf16_msgs_per_s(scorer), 1)
    report["peak_rss_mb"] = peak_rss_mb()
    return report
