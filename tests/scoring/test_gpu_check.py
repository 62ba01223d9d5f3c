"""The prepared device check runs here on the CPU at toy sizes, every step for real: a short
training, CPU-float32 vs device scoring, throughput at both profiles, explanations, and a real
prefork worker on a throw-away database and broker."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.slow


def test_gpu_check_runs_every_step_on_the_cpu_and_prints_one_json_object():
    out = io.StringIO()
    call_command("gpu_check", "--json", stdout=out)
    report = json.loads(out.getvalue())

    steps = ("device", "training", "agreement", "throughput", "explanations", "worker")
    assert report["ok"] is True, {name: report[name].get("error") for name in steps}
    assert all(report[name]["ok"] for name in steps)
    assert report["device"]["device"] == "cpu" and report["device"]["torch_version"]
    assert report["training"]["seconds"] > 0 and report["training"]["epochs"] == 1
    agreement = report["agreement"]
    assert agreement["messages"] == report["sizes"]["agreement_messages"]
    assert agreement["flag_mismatches"] == 0 and agreement["claim_type_mismatches_among_flagged"] == 0
    throughput = report["throughput"]
    assert throughput["scorer_msgs_per_s_default"] > 0 and throughput["scorer_msgs_per_s_gpu_profile"] > 0
    assert throughput["token_budget_gpu_profile"] == 131072
    for profile in ("default", "gpu_profile"):  # the Scorer's host and model halves, each timed alone
        assert throughput[f"host_windows_msgs_per_s_{profile}"] > 0
        assert throughput[f"model_msgs_per_s_{profile}"] > 0
    worker = report["worker"]
    assert worker["messages"] == report["sizes"]["worker_messages"] and worker["failed"] == 0
    assert sum(worker["statuses"].values()) == worker["messages"]
    assert set(worker["statuses"]) <= {"in_review", "cleared", "escalated"}
    assert worker["log_alarms"] == {}
    if report["explanations"]["messages"]:
        assert 0.0 <= report["explanations"]["same_verdict_rate"] <= 1.0
    # the throw-away database took the worker's messages, not the test database
    assert "claimwatch-gpu-check-" in report["training"]["schedule"]
