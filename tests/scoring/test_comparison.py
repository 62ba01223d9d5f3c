"""compare_models: both versions at their own thresholds, on labelled sets and reviewed traffic."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from governance.comparison import compare_versions
from governance.services.comparisons import model_comparison_request
from governance.services.model_versions import model_version_with_threshold
from scoring.errors import ModelVersionError
from scoring.models import ModelComparison
from tests.factories import ReviewDecisionFactory, UserFactory, reviewable_message
from tests.support.services import published

pytestmark = pytest.mark.django_db

ROWS = [
    {
        "id": "t1",
        "body": "Your returns are guaranteed at 9% a year.",
        "label": 1,
        "claim_type": "guaranteed_returns",
        "split": "test",
        "slices": [],
    },
    {
        "id": "t2",
        "body": "Lunch is at noon in the main room.",
        "label": 0,
        "claim_type": "no_claim",
        "split": "test",
        "slices": [],
    },
    {
        "id": "t3",
        "body": "The fund's payout is ironclad, honestly.",
        "label": 1,
        "claim_type": "guaranteed_returns",
        "split": "test",
        "slices": ["novel_phrasing"],
    },
    {
        "id": "x1",
        "body": "Training row never scored.",
        "label": 0,
        "claim_type": "no_claim",
        "split": "train",
        "slices": [],
    },
]


@pytest.fixture
def flag_everything(tiny_model_version):
    return model_version_with_threshold(version=tiny_model_version, threshold=0.0, reason="flags all")


def test_each_version_is_judged_at_its_own_threshold_on_every_set(tiny_model_version, flag_everything):
    reviewer = UserFactory(username="rev", role="reviewer")
    ReviewDecisionFactory(
        reviewer=reviewer, verdict="no_claim", message=reviewable_message(body="Quarterly letter attached.")
    )

    result = compare_versions(
        baseline=tiny_model_version, candidate=flag_everything, corpus_rows=ROWS, drift_n=0
    )

    assert set(result["sets"]) == {"test_in_distribution", "novel_phrasing", "reviewed_traffic"}
    everything = result["sets"]["test_in_distribution"][flag_everything.name]["overall"]
    assert (everything["n"], everything["tp"], everything["fp"]) == (2, 1, 1), "train rows are not scored"
    assert everything["recall"] == 1.0 and everything["precision"] == 0.5
    traffic = result["sets"]["reviewed_traffic"][flag_everything.name]["overall"]
    assert (traffic["n"], traffic["fp"]) == (1, 1)
    assert result["reviewed_traffic"]["messages"] == 1
    assert result["reviewed_traffic"]["scored_now"][flag_everything.name] == 1, (
        "no stored prediction: scored now"
    )
    for label, items in result["disagreements"].items():
        assert result["disagreement_counts"][label] == len(items)
        for item in items:
            assert item[flag_everything.name]["flagged"] != item[tiny_model_version.name]["flagged"]


def test_comparing_a_version_with_itself_is_refused(tiny_model_version):
    with pytest.raises(ModelVersionError, match="two different"):
        model_comparison_request(baseline=tiny_model_version, candidate=tiny_model_version)


def test_a_requested_comparison_is_computed_on_the_checks_queue_not_the_scoring_one(
    tiny_model_version, flag_everything, django_capture_on_commit_callbacks, settings
):
    published(settings.CHECKS_QUEUE), published(settings.SCORING_QUEUE)
    with django_capture_on_commit_callbacks(execute=True):
        comparison = model_comparison_request(baseline=tiny_model_version, candidate=flag_everything)
    assert comparison.status == ModelComparison.Status.PENDING
    assert published(settings.CHECKS_QUEUE) == [("scoring.tasks.compare_models", [comparison.pk])]
    assert published(settings.SCORING_QUEUE) == []


def test_the_command_stores_the_comparison_and_prints_json(
    tiny_model_version, flag_everything, capsys, settings, client, admin_user
):
    call_command("compare_models", tiny_model_version.name, flag_everything.name, "--drift", "0", "--json")

    printed = json.loads(capsys.readouterr().out)
    stored = ModelComparison.objects.get(pk=printed["comparison_id"])
    assert stored.status == ModelComparison.Status.DONE
    assert printed["candidate"]["name"] == flag_everything.name
    assert "test_in_distribution" in printed["sets"]
    # the canary check with both versions: they share the artifact, so the same attributions
    canary = printed["canary"]
    assert canary["canaries"] > 0 and "error" not in canary
    assert set(canary["pass_rates"]) == {tiny_model_version.name, flag_everything.name}
    assert set(canary["pass_rates"][flag_everything.name]) == {"integrated_gradients", "occlusion"}
    assert canary["rank_correlation"] == pytest.approx(1.0)
    # and the comparison page shows per-type precision and the canary check
    client.force_login(admin_user)
    page = client.get(f"/review/models/comparisons/{stored.pk}/").content.decode()
    assert "guaranteed_returns: recall / precision" in page
    assert "Canary faithfulness check" in page and f"The {canary['canaries']} fixed canaries" in page
    assert "<strong>1.000</strong>" in page


def test_an_unknown_version_name_is_a_clear_error(tiny_model_version):
    with pytest.raises(CommandError, match="No model version named 'nope'"):
        call_command("compare_models", tiny_model_version.name, "nope")
