"""bench_explain runs both paths on the same messages; they must compute the same attributions.
(Its timings are figures for the report, never asserted here.)"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.support.models import tiny_corpus_rows, write_jsonl

pytestmark = pytest.mark.django_db
KEYS = {"explain_msgs_per_s", "naive_msgs_per_s", "ratio_vs_naive", "forward_equivalents_per_msg", "device"}


def bench(*options: str) -> dict:
    out = StringIO()
    call_command(
        "bench_explain", "--n", "5", "--n-steps", "8", "--batch-size", "3", "--json", *options,
        stdout=out, stderr=StringIO(),
    )  # fmt: skip
    return json.loads(out.getvalue())


def test_bench_explain_prints_one_json_object_with_both_rates(tiny_model_version, settings, tmp_path):
    settings.CORPUS_PATH = write_jsonl(tmp_path / "claims.jsonl", tiny_corpus_rows())
    data = bench("--precision", "float32")
    assert set(data) >= KEYS
    assert data["ig_precision"] == data["naive_precision"] == "float32"
    assert data["n"] == 5 and data["n_steps"] == 8 and data["device"] == "cpu"
    assert {"cpu_model", "cpu_capability", "native_bf16", "auto_precision", "torch_threads"} <= set(data)
    assert data["explain_msgs_per_s"] > 0 and data["naive_msgs_per_s"] > 0
    assert data["ratio_vs_naive"] == pytest.approx(
        data["explain_msgs_per_s"] / data["naive_msgs_per_s"], rel=0.01
    )
    assert data["forward_equivalents_per_msg"] > 2 * 8 + 2
    # the batched path and the naive loop compute the same attributions and verdicts
    assert data["max_abs_attribution_difference"] < 1e-4
    assert data["same_verdict_rate"] == 1.0
    assert data["mean_rank_correlation"] == pytest.approx(1.0)
    assert data["mean_abs_delta"] == pytest.approx(data["naive_mean_abs_delta"], abs=1e-4)
    assert "refined_msgs_per_s" not in data  # the pipeline's refinement is timed only on request


def test_bench_explain_times_the_refined_path_on_request(tiny_model_version, settings, tmp_path):
    settings.CORPUS_PATH = write_jsonl(tmp_path / "claims.jsonl", tiny_corpus_rows())
    settings.IG_REFINE_DOUBLINGS = 2
    data = bench("--n-steps", "2", "--refinement")
    assert data["refine_doublings"] == 2 and data["refined_msgs_per_s"] > 0
    assert sum(data["refined_steps"].values()) == data["n"]
    assert set(data["refined_steps"]) <= {"2", "4", "8"}
    assert data["refined_mean_abs_delta"] <= data["mean_abs_delta"] + 1e-6
    assert data["refined_converged_rate"] >= data["converged_rate"]


def test_bench_explain_in_bfloat16_keeps_the_ranking_and_the_verdicts(tiny_model_version, settings, tmp_path):
    settings.CORPUS_PATH = write_jsonl(tmp_path / "claims.jsonl", tiny_corpus_rows())
    data = bench("--precision", "bfloat16")
    assert data["ig_precision"] == "bfloat16" and data["naive_precision"] == "float32"
    assert 0 < data["max_abs_attribution_difference"] < 0.1
    assert data["mean_rank_correlation"] > 0.9
    assert data["same_verdict_rate"] == 1.0


def test_bench_explain_refuses_bad_arguments(tiny_model_version):
    with pytest.raises(CommandError, match="--n-steps"):
        call_command("bench_explain", "--n-steps", "1", stdout=StringIO(), stderr=StringIO())
