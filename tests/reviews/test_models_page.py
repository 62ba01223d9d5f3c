"""Model governance pages: activation with a reason, rollback, shadow, threshold variants,
comparisons; admins act, auditors read, reviewers are refused."""

from __future__ import annotations

from unittest import mock

import pytest

from scoring.constants import ROUTING_RULES_ACTIVE, ROUTING_RULES_NONE
from scoring.models import ModelActivation, ModelComparison, ModelVersion
from tests.factories import ModelVersionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_versions(tmp_path):
    with mock.patch("governance.services.model_versions.verify_artifact"):
        old = ModelVersionFactory(name="v-old")
        new = ModelVersionFactory(name="v-new", threshold=0.7)
        yield old, new


def test_admins_see_versions_and_history_auditors_read_reviewers_are_refused(
    client, admin_user, auditor, reviewer
):
    ModelVersionFactory(name="v-listed")

    client.force_login(reviewer)
    assert client.get("/review/models/").status_code == 403
    client.force_login(auditor)
    page = client.get("/review/models/")
    assert (
        page.status_code == 200
        and b"v-listed" in page.content
        and b"Activate (or roll back)" not in page.content
    )
    assert client.post("/review/models/activate", {"version": "v-listed", "reason": "x"}).status_code == 403
    client.force_login(admin_user)
    assert b"Activate (or roll back)" in client.get("/review/models/").content


def test_activation_needs_a_reason_and_records_who_why_and_the_previous_version(
    client, admin_user, two_versions
):
    old, new = two_versions
    client.force_login(admin_user)

    client.post("/review/models/activate", {"version": old.name, "reason": "first"})
    refused = client.post("/review/models/activate", {"version": new.name, "reason": ""}, follow=True)
    client.post("/review/models/activate", {"version": new.name, "reason": "better on new phrasings"})
    client.post("/review/models/activate", {"version": old.name, "reason": "rollback: precision fell"})

    assert b"reason" in refused.content
    history = list(
        ModelActivation.objects.order_by("activated_at").values_list(
            "model_version__name", "previous__name", "reason"
        )
    )
    assert history == [
        ("v-old", None, "first"),
        ("v-new", "v-old", "better on new phrasings"),
        ("v-old", "v-new", "rollback: precision fell"),
    ]
    assert ModelActivation.objects.latest().activated_by == admin_user
    assert ModelVersion.objects.get(is_active=True) == old


def test_shadow_toggle_and_threshold_variant(client, admin_user, two_versions):
    old, new = two_versions
    client.force_login(admin_user)

    client.post(f"/review/models/{new.pk}/shadow", {"enabled": "1"})
    new.refresh_from_db()
    assert new.is_shadow and new.shadow_since is not None
    client.post("/review/models/threshold", {"version": old.name, "threshold": "0.8", "reason": "stricter"})

    variant = ModelVersion.objects.get(parent=old)
    assert variant.threshold == 0.8 and variant.artifact_sha256 == old.artifact_sha256
    old.refresh_from_db()
    assert old.threshold == 0.5, "the original threshold is never edited"


def test_a_comparison_request_is_stored_pending_and_its_page_polls(client, admin_user, two_versions):
    old, new = two_versions
    client.force_login(admin_user)

    response = client.post("/review/models/compare", {"baseline": old.name, "candidate": new.name})

    comparison = ModelComparison.objects.get()
    assert (
        response.status_code == 302 and response["Location"] == f"/review/models/comparisons/{comparison.pk}/"
    )
    page = client.get(response["Location"])
    assert comparison.status == "pending" and b'hx-trigger="every 2s"' in page.content
    assert b"Waiting for a worker on the checks queue" in page.content


def _counts(tp, fp, fn, tn):
    return {
        "n": tp + fp + fn + tn,
        "positives": tp + fn,
        "negatives": fp + tn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "recall": tp / (tp + fn) if tp + fn else None,
        "precision": tp / (tp + fp) if tp + fp else None,
        "false_positive_rate": fp / (fp + tn) if fp + tn else None,
    }


def test_a_versions_page_shows_the_hand_written_sets_by_kind_and_its_reliability_diagram(
    client, auditor, reviewer
):
    # given a version whose metrics carry a hand-written set and its calibration
    table = {
        "ece": 0.041,
        "n": 10,
        "bins": [{"low": 0.9, "high": 1.0, "n": 4, "mean_score": 0.93, "claim_share": 1.0}],
    }
    decisions = {
        key: {
            "overall": _counts(9, 1, 1, 9),
            "per_claim_type": {"risk_free": {"claims": 10, "caught": 9, "recall": 0.9}},
            "per_kind": {"reply_quote": _counts(4, 1, 0, 5), "euphemism": _counts(5, 0, 1, 0)},
        }
        for key in ("routed", "flagged")
    }
    version = ModelVersionFactory(
        name="v-measured",
        metrics={
            "calibration": {"temperature": 1.4, "length_penalty": 0.75, "val": table, "test": table},
            "evaluation_sets": {"eval": {"decisions": decisions, "calibration": table}},
        },
    )

    # when
    client.force_login(auditor)
    page = client.get(f"/review/models/{version.pk}/")

    # then
    html = page.content.decode()
    assert page.status_code == 200
    assert "reply_quote" in html and "4/4" in html and "1/6" in html
    assert 'id="reliability-data"' in html and "eval (ECE 0.041)" in html
    assert "temperature 1.400" in html
    assert "lowered by 0.75 &times; ln(routing windows)" in html
    assert f'href="/review/models/{version.pk}/"' in client.get("/review/models/").content.decode()
    client.force_login(reviewer)
    assert client.get(f"/review/models/{version.pk}/").status_code == 403


def test_the_page_says_when_the_routed_rows_were_measured_without_rules(client, auditor):
    table = {
        "ece": 0.041,
        "n": 10,
        "bins": [{"low": 0.9, "high": 1.0, "n": 4, "mean_score": 0.93, "claim_share": 1.0}],
    }
    decisions = {key: {"overall": _counts(9, 1, 1, 9), "per_kind": {}} for key in ("routed", "flagged")}
    sets = {"evaluation_sets": {"eval": {"decisions": decisions, "calibration": table}}}
    without = ModelVersionFactory(name="v-no-rules", metrics={**sets, "routing_rules": ROUTING_RULES_NONE})
    with_rules = ModelVersionFactory(name="v-rules", metrics={**sets, "routing_rules": ROUTING_RULES_ACTIVE})
    client.force_login(auditor)

    html = client.get(f"/review/models/{without.pk}/").content.decode()
    assert "This version was measured without rules" in html

    html = client.get(f"/review/models/{with_rules.pk}/").content.decode()
    assert "measured without rules" not in html
    assert "Measured with the rule set that was active when the version was trained" in html

    unknown = ModelVersionFactory(name="v-rules-unknown", metrics=sets)  # metrics from before the key
    html = client.get(f"/review/models/{unknown.pk}/").content.decode()
    assert "measured without rules" not in html and "Measured with the rule set" not in html


def test_a_version_without_hand_written_figures_says_so(client, auditor):
    version = ModelVersionFactory(name="v-old-metrics", metrics={})
    client.force_login(auditor)
    assert b"No hand-written set was measured" in client.get(f"/review/models/{version.pk}/").content
