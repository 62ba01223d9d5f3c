"""The faithfulness bar of issue 15 on the real classifier: on the canary claims it flags, the top
words Integrated Gradients names must carry the flag (pass rate >= 0.85), and random words put
through the same rule (the control) must pass on at most 0.20 of them. The report is the one
`faithfulness_report --on canary --random-rankings 20` stores, computed with the product's IG
settings.

The control is read as the mean over 20 random rankings: one ranking of about 31 canaries moves by
about 0.06 from one drawing to the next (README, "How much of that control is the draw"). Since
2026-12-08 a flip of the decision alone no longer passes (explanations.faithfulness.PASS_RULE):
with the threshold chosen on the hand-written development sets (about 0.64), deleting any k words
of a short canary took it under the threshold, and random words passed on 0.516 of them.

A float32 training (a CPU without bf16) gives other weights whose canary figures were never
measured, so there the test says so and skips instead of asserting an unmeasured bar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explanations.evaluation import INTEGRATED_GRADIENTS, RANDOM
from explanations.services import faithfulness_report_create

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_integrated_gradients_passes_the_canaries_and_random_words_do_not(trained_model_version):
    metrics = json.loads((Path(trained_model_version.artifact_path) / "metrics.json").read_text())
    if metrics["training"]["precision"] != "bfloat16":
        pytest.skip("the canary bars were measured on bf16-trained weights only; this host trained float32")

    report = faithfulness_report_create(
        version=trained_model_version, sample=100, source="canary", random_rankings=20
    )

    methods = report.results["methods"]
    ig, random_words = methods[INTEGRATED_GRADIENTS], methods[RANDOM]
    assert report.sample_size >= 30, report.sample_size  # the bars are rates: enough canaries flagged
    assert ig["pass_rate"] >= 0.85, (ig, report.sample_size)
    assert random_words["pass_rate"] < ig["pass_rate"], (random_words, report.sample_size)
    assert report.results["random_rankings"]["pass_rate_mean"] <= 0.20, report.results["random_rankings"]
    # the random control is the floor: IG's words move the score more than random words do
    assert ig["comprehensiveness_log_odds"] > 2 * random_words["comprehensiveness_log_odds"], methods
