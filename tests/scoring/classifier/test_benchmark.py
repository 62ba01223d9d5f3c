"""bench_scoring's measurements on the tiny model: the texts it builds and the report it prints."""

from __future__ import annotations

import io
import json

import pytest
import torch
from django.core.management import CommandError, call_command

from scoring.classifier.benchmark import compare, mixed_length_texts
from scoring.classifier.precision import native_bf16, resolve_precision
from tests.support.models import tiny_corpus_rows

BODIES = [row["body"] for row in tiny_corpus_rows()]


def token_count(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_the_uniform_mix_spreads_over_the_asked_range_and_is_seeded(tiny_scorer):
    tokenizer = tiny_scorer.tokenizer

    def draw(seed):
        return mixed_length_texts(
            BODIES, tokenizer, 60, mix="uniform", min_tokens=10, max_tokens=120, seed=seed
        )

    texts = draw(3)
    lengths = [token_count(tokenizer, t) for t in texts]

    assert all(10 <= n <= 120 for n in lengths), lengths
    assert max(lengths) - min(lengths) > 60  # spread, not one length repeated
    assert texts == draw(3) and texts != draw(4)


def test_the_corpus_mix_keeps_bodies_in_range_and_cuts_long_ones(tiny_scorer):
    tokenizer = tiny_scorer.tokenizer
    long_body = " ".join(["the quarterly newsletter covers our branch opening hours"] * 40)
    bodies = [*BODIES, long_body, "hi"]

    texts = mixed_length_texts(bodies, tokenizer, 200, mix="corpus", min_tokens=5, max_tokens=50, seed=1)

    lengths = [token_count(tokenizer, t) for t in texts]
    assert all(5 <= n <= 50 for n in lengths), lengths
    assert "hi" not in texts  # shorter than min_tokens: never drawn
    assert any(long_body.startswith(t) and token_count(tokenizer, t) == 50 for t in texts)
    assert all(any(body.startswith(t) for body in bodies) for t in texts)  # bodies, or their start


@pytest.mark.parametrize(
    ("n", "low", "high", "mix"),
    [
        (0, 10, 20, "corpus"),
        (5, 0, 20, "corpus"),
        (5, 30, 20, "uniform"),
        (5, 10, 20, "zipf"),
        (5, 900, 999, "corpus"),
    ],
)
def test_mixed_length_texts_refuse_impossible_requests(tiny_scorer, n, low, high, mix):
    with pytest.raises(ValueError):
        mixed_length_texts(BODIES, tiny_scorer.tokenizer, n, mix=mix, min_tokens=low, max_tokens=high)


def test_compare_measures_every_figure_in_one_run(tiny_scorer):
    texts = mixed_length_texts(BODIES, tiny_scorer.tokenizer, 24, mix="uniform", min_tokens=10, max_tokens=80)

    report = compare(tiny_scorer, texts, mix="uniform", progress=False)

    assert (
        report["n"] == 24
        and report["mix"] == "uniform"
        and 10 <= report["tokens_min"] <= report["tokens_max"] <= 80
    )
    by_size = report["pipeline_msgs_per_s_by_batch_size"]
    assert set(by_size) == {"8", "32", "64"} and all(v > 0 for v in by_size.values())
    assert report["pipeline_best_msgs_per_s"] == max(by_size.values())
    assert by_size[str(report["pipeline_best_batch_size"])] == report["pipeline_best_msgs_per_s"]
    for key in ("scorer_msgs_per_s", "pipeline_bs1_msgs_per_s", "peak_rss_mb"):
        assert report[key] > 0, key
    assert report["ratio_vs_bs1"] == pytest.approx(
        report["scorer_msgs_per_s"] / report["pipeline_bs1_msgs_per_s"],
        rel=0.02,
        abs=0.01,  # both sides are rounded to 2 decimals
    )
    assert report["ratio_vs_best"] == pytest.approx(
        report["scorer_msgs_per_s"] / report["pipeline_best_msgs_per_s"],
        rel=0.02,
        abs=0.01,  # both sides are rounded to 2 decimals
    )
    assert report["device"] == "cpu" and "gpu_bf16_64_token_msgs_per_s" not in report


def test_compare_reports_each_sides_token_work_and_the_hardware(tiny_scorer):
    texts = mixed_length_texts(BODIES, tiny_scorer.tokenizer, 10, mix="uniform", min_tokens=10, max_tokens=80)
    lengths = [len(tiny_scorer.tokenizer(t)["input_ids"]) for t in texts]  # with [CLS] and [SEP]
    window_tokens = [sum(w.n_tokens for w in windows) for windows in tiny_scorer.windows(texts)]

    report = compare(tiny_scorer, texts, mix="uniform", progress=False)

    assert report["pipeline_tokens_per_msg"] == pytest.approx(sum(lengths) / 10, abs=0.05)
    assert report["scorer_tokens_per_msg"] == pytest.approx(sum(window_tokens) / 10, abs=0.05)
    # The tiny scorer's 16-token windows overlap, so it reads more tokens than the pipeline.
    assert report["scorer_tokens_per_msg"] > report["pipeline_tokens_per_msg"]
    assert report["scorer_tokens_per_s"] > 0
    assert report["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert report["auto_precision"] == resolve_precision("auto", "cpu")
    assert report["native_bf16"] == native_bf16("cpu") and report["torch_threads"] == torch.get_num_threads()
    assert report["cpu_model"]


@pytest.mark.django_db
def test_bench_scoring_prints_one_json_object_with_the_issue_keys(tiny_model_version, settings, tmp_path):
    from tests.support.models import write_jsonl

    settings.CORPUS_PATH = write_jsonl(tmp_path / "corpus.jsonl", tiny_corpus_rows())
    out = io.StringIO()
    call_command("bench_scoring", "--n", "12", "--json", stdout=out, stderr=io.StringIO())

    report = json.loads(out.getvalue())
    assert report["model_version"] == tiny_model_version.name and report["mix"] == "corpus"
    for key in (
        "scorer_msgs_per_s",
        "pipeline_bs1_msgs_per_s",
        "pipeline_best_msgs_per_s",
        "ratio_vs_bs1",
        "ratio_vs_best",
        "peak_rss_mb",
        "device",
    ):
        assert key in report, key


@pytest.mark.django_db
def test_bench_scoring_without_an_active_model_is_a_clear_error():
    with pytest.raises(CommandError, match="No model version is active"):
        call_command("bench_scoring", "--n", "5")
