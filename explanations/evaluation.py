"""Offline judgement of explanation methods by ablation, not by looks. No Django.

`compare_methods` runs, on the same flagged messages, the faithfulness check of:
- integrated_gradients: Integrated Gradients (explanations.attribution);
- occlusion: word deletion, one word at a time;
- attention_last_layer_mean: the last layer's [CLS] attention row, mean over heads;
- attention_best_head: the [CLS] row of the single head whose top-k deletion lowered the score
  most on a separate selection slice (never on the evaluated messages);
- random: seeded uniform random word scores;
and reports per method the decision-flip rate, pass rate, mean comprehensiveness, sufficiency,
AOPC (and its curve), the check's random baseline, and token-F1 of the top-k words against the
corpus rationale spans. Whichever method's words beat random words most often (pass rate) is the
one that is explaining; the ranking also keeps the flip rate's order for reports made before.

`canary_details` / `compare_canaries`: the fixed canary set checked with the pipeline's own
methods, and compared with the previous model version's results: pass rates, the rank
correlation (Spearman) of the word attributions, and canaries that passed before and fail now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from explanations.agreement import spearman, token_f1
from explanations.attribution import AUTO, integrated_gradients, occlusion
from explanations.corpus import rationale_spans
from explanations.engine import MessageToExplain, explain_messages, explained_spans
from explanations.faithfulness import (
    AOPC_FRACTIONS,
    PASS_RULE,
    CheckInput,
    FaithfulnessResult,
    batch_faithfulness_checks,
    k_for,
    top_k,
)
from explanations.model_attention import attention_maps
from explanations.model_io import ExplainedSpan, score_fn_for
from explanations.words import delete_words

INTEGRATED_GRADIENTS = "integrated_gradients"
OCCLUSION = "occlusion"
ATTENTION_MEAN = "attention_last_layer_mean"
ATTENTION_BEST_HEAD = "attention_best_head"
RANDOM = "random"
REPORT_METHODS: tuple[str, ...] = (
    INTEGRATED_GRADIENTS,
    OCCLUSION,
    ATTENTION_MEAN,
    ATTENTION_BEST_HEAD,
    RANDOM,
)
CHUNK = 8


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def flagged_rows(
    scorer,
    rows: Sequence[dict],
    *,
    threshold: float,
    limit: int,
    rng: np.random.Generator,
    progress: bool = False,
) -> list[dict]:
    """Up to `limit` rows (in a seeded random order) that the model flags at `threshold`,
    scoring only as many rows as it takes."""
    order = rng.permutation(len(rows))
    picked: list[dict] = []
    score_fn = score_fn_for(scorer)
    with tqdm(total=limit, desc="finding flagged messages", disable=not progress) as bar:
        for chunk in _chunks(order, 64):
            candidates = [rows[i] for i in chunk]
            for row, score in zip(candidates, score_fn([r["body"] for r in candidates]), strict=True):
                if score >= threshold and len(picked) < limit:
                    picked.append({**row, "model_score": score})
                    bar.update(1)
            if len(picked) >= limit:
                break
    return picked


def choose_best_head(
    scorer, spans: Sequence[ExplainedSpan], *, progress: bool = False
) -> tuple[tuple[int, int] | None, float | None]:
    """The (layer, head) whose [CLS]-row top-k deletion lowers the score most on average over
    `spans` (the selection slice), and that mean comprehensiveness."""
    spans = [s for s in spans if s.words]
    if not spans:
        return None, None
    score_fn = score_fn_for(scorer)
    index: dict[str, int] = {}
    plans = []  # (full text index, {(layer, head): variant index})
    for chunk in tqdm(list(_chunks(spans, CHUNK)), desc="choosing the best head", disable=not progress):
        for span, maps in zip(chunk, attention_maps(scorer, chunk), strict=True):
            k = k_for(len(span.words))
            variants = {}
            layers, heads = maps.weights.shape[:2]
            for layer in range(layers):
                for head in range(heads):
                    words = maps.cls_row_word_scores(len(span.words), layer=layer, head=head)
                    text = delete_words(span.text, span.words, top_k(words, k))
                    variants[(layer, head)] = index.setdefault(text, len(index))
            plans.append((index.setdefault(span.text, len(index)), variants))
    scores = score_fn(list(index))
    totals: dict[tuple[int, int], float] = {}
    for full, variants in plans:
        for key, i in variants.items():
            totals[key] = totals.get(key, 0.0) + scores[full] - scores[i]
    best = max(totals, key=lambda key: (totals[key], -key[0], -key[1]))
    return best, totals[best] / len(plans)


def _summary(
    checks: Sequence[FaithfulnessResult], f1s: Sequence[float | None], deltas=None
) -> dict[str, Any]:
    n = len(checks)
    if not n:
        return {"n": 0}
    f1 = [x for x in f1s if x is not None]
    summary = {
        "n": n,
        "flip_rate": float(np.mean([c.flipped for c in checks])),
        "pass_rate": float(np.mean([c.passed for c in checks])),
        "comprehensiveness": float(np.mean([c.comprehensiveness for c in checks])),
        "comprehensiveness_log_odds": float(np.mean([c.comprehensiveness_log_odds for c in checks])),
        "random_baseline_log_odds": float(np.mean([c.random_baseline_log_odds for c in checks])),
        "sufficiency": float(np.mean([c.sufficiency for c in checks])),
        "aopc": float(np.mean([c.aopc for c in checks])),
        "random_baseline": float(np.mean([c.random_baseline for c in checks])),
        "beaten_by_random": float(np.mean([c.beaten_by_random for c in checks])),
        "token_f1": float(np.mean(f1)) if f1 else None,
        "token_f1_n": len(f1),
        "aopc_curve": [
            {
                "fraction": f,
                "comprehensiveness": float(np.mean([c.aopc_curve[j].comprehensiveness for c in checks])),
            }
            for j, f in enumerate(AOPC_FRACTIONS)
        ],
    }
    if deltas:
        summary["mean_abs_convergence_delta"] = float(np.mean(np.abs(deltas)))
        summary["max_abs_convergence_delta"] = float(np.max(np.abs(deltas)))
    return summary


def compare_methods(
    scorer,
    rows: Sequence[dict],
    *,
    threshold: float,
    selection_rows: Sequence[dict],
    n_steps: int,
    doublings: int = 0,
    precision: str = AUTO,
    seed: int = 0,
    progress: bool = False,
    ig_budget: Mapping[str, int] | None = None,
    random_rankings: int = 1,
) -> dict[str, Any]:
    """The method comparison on `rows` (flagged corpus rows with rationales); see the module
    docstring. The best attention head is chosen on `selection_rows`, disjoint from `rows`.
    `ig_budget`: IG's tokens per forward pass and per call (attribution's defaults).

    `random_rankings` > 1: the random control is also drawn that many times per message (the
    first is the `random` method, drawn as with 1; the others from their own seeded generator),
    and `random_rankings` in the result gives each drawing's pass rate over the messages, their
    mean and standard deviation. One drawing is one random ranking per message, so its pass rate
    over about 34 canaries moves by about 0.07 from one drawing to the next; the mean over many is
    the control's own figure, what a decision between two models should read."""
    if random_rankings < 1:
        raise ValueError("random_rankings must be at least 1")
    extra_rng = np.random.default_rng([seed, 1])
    extra_passed: list[list[bool]] = [[] for _ in range(random_rankings - 1)]
    score_fn = score_fn_for(scorer)
    selection_spans = [
        s
        for s in explained_spans(scorer, [MessageToExplain(r["body"], threshold) for r in selection_rows])
        if isinstance(s, ExplainedSpan)
    ]
    best_head, best_head_comp = choose_best_head(scorer, selection_spans, progress=progress)
    rng = np.random.default_rng(seed)
    checks: dict[str, list[FaithfulnessResult]] = {m: [] for m in REPORT_METHODS}
    f1s: dict[str, list[float | None]] = {m: [] for m in REPORT_METHODS}
    deltas: list[float] = []
    skipped: list[str] = []
    per_message: list[dict[str, Any]] = []
    for chunk in tqdm(list(_chunks(list(rows), CHUNK)), desc="explaining and checking", disable=not progress):
        spans_or_reasons = explained_spans(scorer, [MessageToExplain(r["body"], threshold) for r in chunk])
        kept = [(r, s) for r, s in zip(chunk, spans_or_reasons, strict=True) if isinstance(s, ExplainedSpan)]
        skipped += [
            r["id"] for r, s in zip(chunk, spans_or_reasons, strict=True) if not isinstance(s, ExplainedSpan)
        ]
        if not kept:
            continue
        spans = [s for _, s in kept]
        ig = integrated_gradients(
            scorer, spans, n_steps=n_steps, doublings=doublings, precision=precision, **(ig_budget or {})
        )
        deltas += [a.convergence_delta for a in ig]
        maps = attention_maps(scorer, spans)
        scores_by_method: dict[str, list[Sequence[float]]] = {
            INTEGRATED_GRADIENTS: [a.scores for a in ig],
            OCCLUSION: [a.scores for a in occlusion(score_fn, spans)],
            ATTENTION_MEAN: [m.cls_row_word_scores(len(s.words)) for m, s in zip(maps, spans, strict=True)],
            RANDOM: [rng.random(len(s.words)) for s in spans],
        }
        if best_head is not None:
            scores_by_method[ATTENTION_BEST_HEAD] = [
                m.cls_row_word_scores(len(s.words), layer=best_head[0], head=best_head[1])
                for m, s in zip(maps, spans, strict=True)
            ]
        items = [
            CheckInput(text=s.text, words=s.words, scores=list(map(float, scores)), threshold=threshold)
            for method in scores_by_method
            for s, scores in zip(spans, scores_by_method[method], strict=True)
        ]
        extra = [
            CheckInput(
                text=s.text,
                words=s.words,
                scores=list(map(float, extra_rng.random(len(s.words)))),
                threshold=threshold,
            )
            for _ in extra_passed
            for s in spans
        ]
        checked = batch_faithfulness_checks(items + extra, score_fn, seed=seed)
        for r, passed in enumerate(extra_passed):
            first = len(items) + r * len(spans)
            passed += [c.passed for c in checked[first : first + len(spans)]]
        results = iter(checked[: len(items)])
        row_methods: list[dict[str, Any]] = [{} for _ in kept]
        for method in scores_by_method:
            for j, (row, span) in enumerate(kept):
                check = next(results)
                top = [(span.start + w.start, span.start + w.end) for w in check.top_words]
                f1 = token_f1(top, rationale_spans(row), row["body"])
                checks[method].append(check)
                f1s[method].append(f1)
                row_methods[j][method] = {
                    "comprehensiveness": round(check.comprehensiveness, 4),
                    "comprehensiveness_log_odds": round(check.comprehensiveness_log_odds, 4),
                    "flipped": check.flipped,
                    "passed": check.passed,
                    "token_f1": None if f1 is None else round(f1, 4),
                }
        per_message += [
            {"id": row["id"], "score": round(float(row.get("model_score", np.nan)), 4), "methods": methods}
            for (row, _), methods in zip(kept, row_methods, strict=True)
        ]
    methods = {
        m: _summary(checks[m], f1s[m], deltas if m == INTEGRATED_GRADIENTS else None)
        for m in REPORT_METHODS
        if checks[m]
    }

    def ranked(rate: str) -> list[str]:  # highest rate first, ties by comprehensiveness
        return sorted(
            methods, key=lambda m: (methods[m][rate], methods[m]["comprehensiveness"]), reverse=True
        )

    rankings = None
    if random_rankings > 1 and checks[RANDOM]:
        rates = [float(np.mean([c.passed for c in checks[RANDOM]]))]
        rates += [float(np.mean(passed)) for passed in extra_passed]
        rankings = {
            "rankings": random_rankings,
            "pass_rates": [round(r, 4) for r in rates],
            "pass_rate_mean": float(np.mean(rates)),
            "pass_rate_sd": float(np.std(rates, ddof=1)),
        }
    return {
        "methods": methods,
        "random_rankings": rankings,
        "ranking_by_pass_rate": ranked("pass_rate"),
        "ranking_by_flip_rate": ranked("flip_rate"),
        "best_head": None
        if best_head is None
        else {
            "layer": best_head[0],
            "head": best_head[1],
            "selection_comprehensiveness": best_head_comp,
            "selection_size": len(selection_spans),
        },
        "skipped": skipped,
        "per_message": per_message,
        "pass_rule": PASS_RULE,
    }


# --- the canary set ---------------------------------------------------------------------------------


def canary_details(
    scorer,
    rows: Sequence[dict],
    *,
    threshold: float,
    n_steps: int,
    doublings: int = 0,
    precision: str = AUTO,
    progress: bool = False,
    ig_budget: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Each canary checked with the pipeline's methods: whether the model flags it, and per
    method the word attribution ([start, end, score] in the body), the check's numbers and
    verdict (or why it failed). `ig_budget` as in compare_methods."""
    score_fn: Callable = score_fn_for(scorer)
    details: list[dict[str, Any]] = []
    for chunk in tqdm(list(_chunks(list(rows), CHUNK)), desc="canary check", disable=not progress):
        outcomes = explain_messages(
            scorer,
            [MessageToExplain(r["body"], threshold) for r in chunk],
            n_steps=n_steps,
            doublings=doublings,
            precision=precision,
            attention=False,
            ig_budget=ig_budget,
        )
        scores = score_fn([r["body"] for r in chunk])
        for row, outcome, score in zip(chunk, outcomes, scores, strict=True):
            methods = {}
            for name, result in outcome.methods.items():
                if not result.ok:
                    methods[name] = {"ok": False, "failure": result.failure}
                    continue
                methods[name] = {
                    "ok": True,
                    "passed": result.check.passed,
                    "flipped": result.check.flipped,
                    "comprehensiveness": result.check.comprehensiveness,
                    "comprehensiveness_log_odds": result.check.comprehensiveness_log_odds,
                    "random_baseline": result.check.random_baseline,
                    "random_baseline_log_odds": result.check.random_baseline_log_odds,
                    "beaten_by_random": result.check.beaten_by_random,
                    "verdict": result.check.verdict_text,
                    "words": [[w["start"], w["end"], round(w["score"], 6)] for w in result.words],
                }
            details.append(
                {
                    "id": row["id"],
                    "claim_type": row.get("claim_type"),
                    "score": score,
                    "flagged": score >= threshold,
                    "methods": methods,
                }
            )
    return details


def _aligned_spearman(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> float | None:
    """Spearman of two attributions over the words both contain (same [start, end))."""
    other = {(int(s), int(e)): v for s, e, v in b}
    pairs = [(v, other[(int(s), int(e))]) for s, e, v in a if (int(s), int(e)) in other]
    if len(pairs) < 2:
        return None
    return spearman([p[0] for p in pairs], [p[1] for p in pairs])


def compare_canaries(
    current: Sequence[dict[str, Any]], previous: Sequence[dict[str, Any]] | None
) -> dict[str, Any]:
    """Pass rates per method now; against the previous version (when given): the mean rank
    correlation of attributions per method (rank_correlation: Integrated Gradients'), and the
    findings: canaries whose check passed before and fails now."""
    methods = sorted({m for d in current for m in d["methods"]})
    pass_rates = {}
    for method in methods:
        results = [d["methods"][method] for d in current if method in d["methods"]]
        pass_rates[method] = float(np.mean([r.get("passed", False) for r in results])) if results else None
    out: dict[str, Any] = {
        "pass_rates": pass_rates,
        "flag_rate": float(np.mean([d["flagged"] for d in current])) if current else None,
        "rank_correlations": {},
        "rank_correlation": None,
        "findings": [],
    }
    if not previous:
        return out
    before = {d["id"]: d for d in previous}
    for method in methods:
        rhos = []
        for d in current:
            old = before.get(d["id"], {}).get("methods", {}).get(method)
            new = d["methods"].get(method)
            if not (old and new and old.get("ok") and new.get("ok")):
                continue
            rho = _aligned_spearman(new["words"], old["words"])
            if rho is not None:
                rhos.append(rho)
            if old.get("passed") and not new.get("passed"):
                out["findings"].append(
                    {
                        "id": d["id"],
                        "method": method,
                        "before": old.get("verdict", ""),
                        "now": new.get("verdict", ""),
                    }
                )
        out["rank_correlations"][method] = float(np.mean(rhos)) if rhos else None
    for d in current:
        for method, new in d["methods"].items():
            old = before.get(d["id"], {}).get("methods", {}).get(method)
            if old and old.get("ok") and old.get("passed") and not new.get("ok"):
                out["findings"].append(
                    {"id": d["id"], "method": method, "before": old.get("verdict", ""), "now": new["failure"]}
                )
    out["rank_correlation"] = out["rank_correlations"].get(INTEGRATED_GRADIENTS)
    return out
