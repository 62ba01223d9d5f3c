"""The faithfulness bar of issue 15 on the real classifier: on the canary claims it flags, the top
words Integrated Gradients names must carry the flag (pass rate >= 0.85) while random words put
through the same rule must not (<= 0.20). The report is the one `faithfulness_report --on canary`
stores, computed with the product's IG settings.

Measured on models trained with bf16 autocast: the default (claim phrases erased, seed 13) passes
IG 0.882 and random words 0.118 on 34 canaries when trained on an Intel Xeon with AMX, and 0.879
and 0.152 on 33 when trained on an AMD EPYC with AVX512-BF16 (the two CPUs' bf16 kernels give
weights a little apart); seeds 14 and 15 pass IG 0.912 and 0.941 on the AMX host (README, "Erasing
the claim phrases" and "The same default trained on another host"). A float32 training (a CPU
without bf16) gives other weights whose canary figures were never measured, so there the test
says so and skips instead of asserting an unmeasured bar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explanations.evaluation import INTEGRATED_GRADIENTS, RANDOM
from explanations.services import faithfulness_report_create

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_integrated_gradients_explains_the_flagged_canaries_and_random_words_do_not(trained_model_version):
    metrics = json.loads((Path(trained_model_version.artifact_path) / "metrics.json").read_text())
    if metrics["training"]["precision"] != "bfloat16":
        pytest.skip("the canary bars were measured on bf16-trained weights only; this host trained float32")

    report = faithfulness_report_create(version=trained_model_version, sample=100, source="canary")

    methods = report.results["methods"]
    ig, random_words = methods[INTEGRATED_GRADIENTS], methods[RANDOM]
    assert report.sample_size >= 30, report.sample_size  # the bars are rates: enough canaries flagged
    assert ig["pass_rate"] >= 0.85, (ig, report.sample_size)
    assert random_words["pass_rate"] <= 0.20, (random_words, report.sample_size)
    # the random control is the floor: IG's words move the score more than random words do
    assert ig["comprehensiveness_log_odds"] > 2 * random_words["comprehensiveness_log_odds"], methods
