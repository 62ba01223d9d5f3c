"""The faithfulness report command, the canary check at activation, and the report page."""

from __future__ import annotations

import json
import statistics
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from explanations.corpus import canary_ids, read_rows
from explanations.evaluation import REPORT_METHODS, compare_canaries
from explanations.faithfulness import PASS_RULE
from explanations.models import CanaryCheck, FaithfulnessReport
from explanations.services import canary_check_for_activation, canary_check_run
from explanations.services.reports import faithfulness_report_for_activation
from governance.services.model_versions import model_version_activate, model_version_with_threshold
from scoring.models import ModelActivation
from tests.support.models import tiny_corpus_rows, write_jsonl
from tests.support.services import broker, published

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny_corpus(tmp_path, settings):
    """The tiny model's own corpus (no canary.json beside it: the fallback rule picks canaries)."""
    path = write_jsonl(tmp_path / "claims.jsonl", tiny_corpus_rows())
    settings.CORPUS_PATH = path
    settings.IG_N_STEPS = 8
    return path


def run_report(*args: str) -> dict:
    out = StringIO()
    call_command("faithfulness_report", *args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


# --- the report ------------------------------------------------------------------------------------------


def test_the_report_compares_every_method_on_the_same_flagged_test_messages(tiny_model_version, tiny_corpus):
    # when
    data = run_report("--sample", "6", "--selection", "4")
    # then one stored report with the figures of every method on the same messages
    report = FaithfulnessReport.objects.get(pk=data["report_id"])
    assert report.model_version == tiny_model_version
    assert data["model_version"] == tiny_model_version.name
    assert 1 <= report.sample_size <= 6
    test_ids = {r["id"] for r in tiny_corpus_rows() if r["split"] == "test"}
    messages = report.results["per_message"]
    assert len(messages) == report.sample_size and {m["id"] for m in messages} <= test_ids
    assert all(m["score"] >= tiny_model_version.threshold for m in messages)
    assert set(data["methods"]) == set(REPORT_METHODS)
    for name, figures in data["methods"].items():
        assert figures["n"] == report.sample_size, name
        for key in ("flip_rate", "pass_rate"):
            assert 0.0 <= figures[key] <= 1.0
        assert -1.0 <= figures["comprehensiveness"] <= 1.0
        assert [p["fraction"] for p in figures["aopc_curve"]] == [0.01, 0.05, 0.10, 0.20, 0.50]
        assert figures["token_f1"] is None or 0.0 <= figures["token_f1"] <= 1.0
    flips = [m["methods"]["integrated_gradients"]["flipped"] for m in messages]
    assert data["methods"]["integrated_gradients"]["flip_rate"] == pytest.approx(sum(flips) / len(flips))
    ig = data["methods"]["integrated_gradients"]
    assert 0.0 <= ig["mean_abs_convergence_delta"] <= ig["max_abs_convergence_delta"]
    head = data["best_head"]
    assert 0 <= head["layer"] < 2 and 0 <= head["head"] < 2 and head["selection_size"] <= 4
    assert (
        data["parameters"]["n_steps"] == 8 and data["parameters"]["threshold"] == tiny_model_version.threshold
    )
    assert sorted(data["ranking_by_flip_rate"]) == sorted(REPORT_METHODS)
    rates = [data["methods"][m]["pass_rate"] for m in data["ranking_by_pass_rate"]]
    assert sorted(data["ranking_by_pass_rate"]) == sorted(REPORT_METHODS) and rates == sorted(
        rates, reverse=True
    )


def test_the_random_control_drawn_many_times_gives_each_drawing_and_leaves_the_first_as_it_was(
    tiny_model_version, tiny_corpus
):
    # given: the report with its one drawing of the random control
    once = run_report("--sample", "6", "--selection", "4")

    # when: the same report with the control drawn 12 times
    many = run_report("--sample", "6", "--selection", "4", "--random-rankings", "12")

    # then: the random method is the same first drawing (scored in other batches: equal to about
    # 1e-7), and each drawing's pass rate is listed
    first, before = many["methods"]["random"], once["methods"]["random"]
    assert (first["pass_rate"], first["flip_rate"]) == (before["pass_rate"], before["flip_rate"])
    assert first["comprehensiveness"] == pytest.approx(before["comprehensiveness"], abs=1e-6)
    assert once["random_rankings"] is None
    drawn = many["random_rankings"]
    rates = drawn["pass_rates"]
    assert drawn["rankings"] == 12 and len(rates) == 12 and many["parameters"]["random_rankings"] == 12
    assert rates[0] == pytest.approx(many["methods"]["random"]["pass_rate"], abs=1e-4)
    n = many["sample_size"]
    assert all(0.0 <= r <= 1.0 and abs(r * n - round(r * n)) < 1e-3 for r in rates)  # k of n messages
    assert drawn["pass_rate_mean"] == pytest.approx(sum(rates) / 12, abs=1e-3)
    assert drawn["pass_rate_sd"] == pytest.approx(statistics.stdev(rates), abs=1e-3)

    # and the table says it too
    out = StringIO()
    call_command(
        "faithfulness_report", "--sample", "3", "--selection", "2", "--random-rankings", "3", stdout=out
    )
    assert "random words over 3 drawings: pass rate mean" in out.getvalue()


def test_the_report_prints_a_table_without_json(tiny_model_version, tiny_corpus):
    out = StringIO()
    call_command("faithfulness_report", "--sample", "3", "--selection", "2", stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert f"of {tiny_model_version.name}" in text
    for method in REPORT_METHODS:
        assert method in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample", "0"], "at least 1"),
        (["--model", "no-such-version"], "No model version named"),
        (["--random-rankings", "0"], "--random-rankings must be at least 1"),
    ],
)
def test_bad_arguments_are_refused_and_store_nothing(tiny_model_version, tiny_corpus, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("faithfulness_report", *args, stdout=StringIO(), stderr=StringIO())
    assert not FaithfulnessReport.objects.exists()


def test_a_missing_corpus_is_a_clear_error(tiny_model_version, settings, tmp_path):
    settings.CORPUS_PATH = tmp_path / "nowhere.jsonl"
    with pytest.raises(CommandError, match="does not exist"):
        call_command("faithfulness_report", stdout=StringIO(), stderr=StringIO())
    assert not FaithfulnessReport.objects.exists()


def test_a_model_that_flags_nothing_is_a_clear_error(tiny_model_version, tiny_corpus):
    strict = model_version_with_threshold(version=tiny_model_version, threshold=1.0, reason="test")
    with pytest.raises(CommandError, match="flags none"):
        call_command("faithfulness_report", "--model", strict.name, stdout=StringIO(), stderr=StringIO())


# --- the canary set ----------------------------------------------------------------------------------------


def test_the_canary_set_is_canary_json_when_the_corpus_has_one(tmp_path):
    rows = tiny_corpus_rows()
    path = write_jsonl(tmp_path / "claims.jsonl", rows)
    picked = [rows[4]["id"], rows[9]["id"]]
    (tmp_path / "canary.json").write_text(json.dumps({"ids": picked}))
    ids, source = canary_ids(path, read_rows(path))
    assert ids == picked
    assert source == f"canary.json beside {path.name}" and str(tmp_path) not in source


def test_without_canary_json_the_fallback_rule_picks_test_claims_per_type(tmp_path):
    rows = tiny_corpus_rows()
    path = write_jsonl(tmp_path / "claims.jsonl", rows)
    ids, source = canary_ids(path, rows)
    by_id = {r["id"]: r for r in rows}
    assert ids and all(by_id[i]["split"] == "test" and by_id[i]["label"] == 1 for i in ids)
    assert "per claim type" in source
    assert canary_ids(path, rows) == (ids, source)  # fixed


def test_the_committed_corpus_canary_list_is_used(settings):
    rows = read_rows(settings.CORPUS_PATH)
    ids, source = canary_ids(settings.CORPUS_PATH, rows)
    assert source.startswith("canary.json beside ") and len(ids) == 40


def test_activation_rechecks_the_canaries_and_records_drift(
    tiny_model_version, tiny_corpus, eager_celery, django_capture_on_commit_callbacks
):
    # given the canaries checked when the tiny version was active
    first = canary_check_run(version=tiny_model_version, previous=None)
    assert first.error == "" and first.findings == [] and first.rank_correlation is None
    assert set(first.pass_rates) == {"integrated_gradients", "occlusion"}
    assert any(d["methods"]["integrated_gradients"]["passed"] for d in first.details)
    # when a version with the same weights but a threshold nothing reaches is activated
    strict = model_version_with_threshold(version=tiny_model_version, threshold=1.0, reason="drift test")
    with django_capture_on_commit_callbacks(execute=True):
        activation = model_version_activate(version=strict, reason="drift test")
    # then the activation's queued task recorded a canary check against the previous version
    check = CanaryCheck.objects.get(model_version=strict)
    assert check.activation == activation and check.previous_version == tiny_model_version
    assert check.parameters["previous_source"] == f"canary check {first.pk} of {tiny_model_version.name}"
    # same weights: the attributions rank the words identically
    assert check.rank_correlation == pytest.approx(1.0)
    # nothing is flagged any more, but the pass rule does not read the threshold (a flip alone
    # never passes): the same weights pass and fail the same canaries, so nothing is a finding
    assert check.parameters["flag_rate"] == 0.0
    assert check.pass_rates == first.pass_rates
    verdicts = {(d["id"], m): r.get("passed") for d in first.details for m, r in d["methods"].items()}
    assert verdicts == {(d["id"], m): r.get("passed") for d in check.details for m, r in d["methods"].items()}
    assert check.findings == []
    # and running the activation's task again changes nothing
    assert canary_check_for_activation(activation_id=activation.pk) == check
    assert CanaryCheck.objects.filter(model_version=strict).count() == 1


def test_an_activated_version_gets_its_faithfulness_report_on_the_checks_task_once(
    tiny_model_version, tiny_corpus, settings
):
    # given an activated version with no faithfulness report
    settings.FAITHFULNESS_REPORT_SAMPLE = 5
    activation = ModelActivation.objects.filter(model_version=tiny_model_version).latest()
    assert not FaithfulnessReport.objects.filter(model_version=tiny_model_version).exists()

    # when the activation's checks task runs, twice
    canary_check_for_activation(activation_id=activation.pk)
    canary_check_for_activation(activation_id=activation.pk)

    # then the version has one report, made with the IG settings in force, of every method
    report = FaithfulnessReport.objects.get(model_version=tiny_model_version)
    assert 1 <= report.sample_size <= 5 and report.parameters["n_steps"] == 8
    assert set(report.results["methods"]) == set(REPORT_METHODS)


def test_checks_judged_by_an_earlier_pass_rule_are_made_again_not_reused(
    tiny_model_version, tiny_corpus, settings
):
    # given a stored canary check and report judged by another rule (the rule before 2026-12-08)
    settings.FAITHFULNESS_REPORT_SAMPLE = 5
    activation = ModelActivation.objects.filter(model_version=tiny_model_version).latest()
    canary_check_for_activation(activation_id=activation.pk)
    old = FaithfulnessReport.objects.get(model_version=tiny_model_version)
    stored = CanaryCheck.objects.get(model_version=tiny_model_version)
    assert old.parameters["pass_rule"] == stored.parameters["pass_rule"] == PASS_RULE
    for row in (old, stored):
        row.parameters["pass_rule"] = "Passes when deleting the top-k attributed words flips the decision ..."
        row.save(update_fields=["parameters"])

    # when the version is compared again and its report is asked for at activation
    other = model_version_with_threshold(version=tiny_model_version, threshold=0.5, reason="rule test")
    check = canary_check_run(version=other, previous=tiny_model_version)
    remade = faithfulness_report_for_activation(version=tiny_model_version)

    # then neither old judgement is read as if the current rule had made it
    assert check.parameters["previous_source"] == f"computed now with {tiny_model_version.name}"
    assert remade != old and remade.parameters["pass_rule"] == PASS_RULE
    assert FaithfulnessReport.objects.filter(model_version=tiny_model_version).count() == 2


def test_the_report_at_activation_can_be_switched_off(tiny_model_version, tiny_corpus, settings):
    settings.FAITHFULNESS_REPORT_SAMPLE = 0
    activation = ModelActivation.objects.filter(model_version=tiny_model_version).latest()
    canary_check_for_activation(activation_id=activation.pk)
    assert not FaithfulnessReport.objects.filter(model_version=tiny_model_version).exists()


def test_the_canary_check_of_an_activation_is_queued_not_waited_for(
    tiny_model_version, tiny_corpus, django_capture_on_commit_callbacks, settings
):
    other = model_version_with_threshold(version=tiny_model_version, threshold=0.5, reason="test")
    published(settings.CHECKS_QUEUE), published(settings.EXPLAIN_QUEUE)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        activation = model_version_activate(version=other, reason="test")
    assert len(callbacks) == 1
    assert not CanaryCheck.objects.exists()
    # on the checks queue, where it cannot hold up scoring and explaining on `gpu`
    assert published(settings.CHECKS_QUEUE) == [("explanations.tasks.canary_check", [activation.pk])]
    assert published(settings.EXPLAIN_QUEUE) == []


def test_when_the_broker_is_down_the_check_records_how_to_run_it_by_hand(
    tiny_model_version, tiny_corpus, django_capture_on_commit_callbacks
):
    other = model_version_with_threshold(version=tiny_model_version, threshold=0.5, reason="test")
    with broker("redis://127.0.0.1:9/0"), django_capture_on_commit_callbacks(execute=True):
        activation = model_version_activate(version=other, reason="test")
    check = CanaryCheck.objects.get(activation=activation)
    assert "could not be queued" in check.error and f"canary_check --model {other.name}" in check.error


def test_a_canary_check_that_cannot_run_is_recorded_with_the_reason(tiny_model_version, settings, tmp_path):
    settings.CORPUS_PATH = tmp_path / "missing.jsonl"
    check = canary_check_run(version=tiny_model_version, previous=None)
    assert "does not exist" in check.error
    assert check.pass_rates == {} and check.details == []


def test_the_canary_check_command_runs_it_by_hand(tiny_model_version, tiny_corpus):
    out = StringIO()
    call_command("canary_check", "--json", stdout=out, stderr=StringIO())
    data = json.loads(out.getvalue())
    check = CanaryCheck.objects.get(pk=data["canary_check"])
    assert check.model_version == tiny_model_version and check.activation is None and not check.error
    assert set(data["pass_rates"]) == {"integrated_gradients", "occlusion"}


def test_activation_does_not_queue_the_check_when_it_is_switched_off(
    tiny_model_version, tiny_corpus, settings, eager_celery, django_capture_on_commit_callbacks
):
    settings.CANARY_ON_ACTIVATION = False
    other = model_version_with_threshold(version=tiny_model_version, threshold=0.5, reason="test")
    with django_capture_on_commit_callbacks(execute=True):
        model_version_activate(version=other, reason="test")
    assert not CanaryCheck.objects.exists()


def test_compare_canaries_aligns_words_and_lists_what_passed_before_and_fails_now():
    def canary(cid, passed, words):
        result = {"ok": True, "passed": passed, "verdict": f"v-{passed}", "words": words}
        return {"id": cid, "flagged": True, "methods": {"integrated_gradients": result}}

    before = [
        canary("a", True, [[0, 3, 0.9], [4, 8, 0.1], [9, 12, 0.5]]),
        canary("b", False, [[0, 2, 1.0], [3, 5, 0.0]]),
    ]
    now = [
        canary("a", False, [[0, 3, 0.1], [4, 8, 0.9], [9, 12, 0.5], [13, 15, 0.2]]),
        canary("b", True, [[0, 2, 1.0], [3, 5, 0.0]]),
    ]
    result = compare_canaries(now, before)
    assert result["pass_rates"] == {"integrated_gradients": 0.5}
    assert result["findings"] == [
        {"id": "a", "method": "integrated_gradients", "before": "v-True", "now": "v-False"}
    ]
    # a: ranks reversed on the shared words (-1); b: identical (+1)
    assert result["rank_correlation"] == pytest.approx(0.0)
    assert compare_canaries(now, None)["findings"] == []


# --- the page ----------------------------------------------------------------------------------------------

URL = reverse("explanations:faithfulness")


def test_the_page_shows_the_figures_of_the_latest_report_and_canary_check(
    client, admin_user, tiny_model_version, tiny_corpus
):
    data = run_report("--sample", "3", "--selection", "2")
    canary_check_run(version=tiny_model_version, previous=None)
    client.force_login(admin_user)
    response = client.get(URL)
    html = response.content.decode()
    assert response.status_code == 200
    assert tiny_model_version.name in html
    flip = data["methods"]["integrated_gradients"]["flip_rate"]
    assert f"{flip:.3f}" in html
    assert "Integrated Gradients" in html and "Random words" in html and "best single head" in html
    assert "Passes when deleting the top-k attributed words lowers the score" in html
    assert "a flip of the decision alone does not pass" in html
    assert "Random draws that beat it (share)" in html
    chart = json.loads(
        html.split('<script id="faithfulness-data" type="application/json">')[1].split("</script>")[0]
    )
    assert chart["metrics"]["flip_rate"][0] == pytest.approx(flip)
    assert chart["canary"]["pass_rates"]
    assert 'src="/static/js/report_faithfulness.js"' in html
    assert "<script>" not in html and "onclick" not in html


def test_the_page_says_when_there_is_no_report(client, admin_user, tiny_model_version):
    client.force_login(admin_user)
    html = client.get(URL).content.decode()
    assert "No faithfulness report yet" in html and "python manage.py faithfulness_report" in html


@pytest.mark.parametrize("persona", ["reviewer", "auditor", "outsider"])
def test_only_compliance_admins_see_the_report(client, request, persona):
    client.force_login(request.getfixturevalue(persona))
    assert client.get(URL).status_code == 403


def test_an_unknown_version_is_not_found(client, admin_user):
    client.force_login(admin_user)
    assert client.get(URL, {"version": "nope"}).status_code == 404
