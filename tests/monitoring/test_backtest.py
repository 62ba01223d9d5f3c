"""Rule-set drafts backtested before they are published (issue 19): the figures on a seeded
database (a new rule with the negation guard, a context rule, a dropped rule, routing parts, the
period), the task, the command, the two-step publish, and the draft page."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from types import SimpleNamespace
from unittest import mock

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from monitoring.backtest import rule_backtest_now, rule_backtest_request, rule_backtest_run
from scoring.backtest_helper import ScanHelper
from scoring.errors import RuleSetError
from scoring.models import RuleSet, RuleSetBacktest
from scoring.selectors import clear_compiled_rules_cache
from scoring.services.rule_sets import (
    RuleDraft,
    rule_set_draft_create,
    rule_set_draft_publish,
    rule_set_roll_back,
)
from tests.monitoring.conftest import decide, routed
from tests.support.rule_sets import publish_edit

pytestmark = pytest.mark.django_db

MOON = RuleDraft(code="PF-900", claim_type="performance_forecast", pattern=r"\bto\s+the\s+moon\b")
BULLETPROOF = RuleDraft(
    code="RF-900", claim_type="risk_free", pattern=r"\bbulletproof\b", context_terms=("principal", "capital")
)


@pytest.fixture(autouse=True)
def _fresh_rule_cache():
    clear_compiled_rules_cache()
    yield
    clear_compiled_rules_cache()


@pytest.fixture
def staff_admin(admin_user):
    admin_user.is_staff = True
    admin_user.save(update_fields=["is_staff"])
    return admin_user


@pytest.fixture
def draft(staff_admin):
    """The seeded active set (v2) plus a forecast rule and a context rule, minus GR-004."""
    active = RuleSet.objects.get(is_active=True)
    return rule_set_draft_create(
        base=active,
        user=staff_admin,
        note="moon talk and bulletproof capital",
        add=[MOON, BULLETPROOF],
        remove=["GR-004"],
    )


@pytest.fixture
def stored(version, reviewer):
    """Messages of the last 30 days (and one older), scored by `version` (threshold 0.5)."""
    now = timezone.now()
    at = now - timedelta(days=3)
    quoted_body = "Thanks, noted.\n\n> On Monday you wrote:\n> This coin is going to the moon."
    messages = {
        "moon": routed(
            version,
            received_at=at,
            score=0.1,
            route="cleared",
            body="This coin is going to the moon, trust me.",
        ),
        "negated": routed(
            version, received_at=at, score=0.1, route="cleared", body="We never said it goes to the moon."
        ),
        "principal": routed(
            version, received_at=at, score=0.1, route="cleared", body="Your principal is bulletproof with us."
        ),
        "door": routed(
            version, received_at=at, score=0.1, route="cleared", body="The new office door is bulletproof."
        ),
        "flagged": routed(
            version, received_at=at, score=0.9, body="Our token is headed to the moon this year."
        ),
        "assured": routed(
            version, received_at=at, score=0.1, route="rule_hit", body="You get assured income with us."
        ),
        "old": routed(
            version,
            received_at=now - timedelta(days=40),
            score=0.1,
            route="cleared",
            body="Straight to the moon.",
        ),
        "quoted": routed(version, received_at=at, score=0.1, route="cleared", body=quoted_body),
    }
    quoted = messages["quoted"].routing_prediction
    quoted.segments = [
        {"kind": "body", "start": 0, "end": 14, "routes": True},
        {"kind": "quoted", "start": 16, "end": len(quoted_body), "routes": False},
    ]
    quoted.save(update_fields=["segments"])
    decide(
        messages["flagged"],
        verdict="claim",
        claim_code="performance_forecast",
        at=now - timedelta(days=2),
        reviewer=reviewer,
    )
    decide(messages["assured"], verdict="no_claim", at=now - timedelta(days=2), reviewer=reviewer)
    return messages


@pytest.fixture
def version():
    from tests.factories import ModelVersionFactory

    return ModelVersionFactory(threshold=0.5, is_active=True)


def test_the_backtest_counts_what_the_draft_routes_differently_per_rule_with_how_reviewers_decided(
    draft, stored, staff_admin
):
    backtest = rule_backtest_request(draft=draft, user=staff_admin, days=30)
    backtest = rule_backtest_run(backtest_id=backtest.pk)

    assert backtest.status == "done", backtest.error
    r = backtest.results
    assert r["messages"] == 7  # the 40-day-old message is outside the period
    assert r["rules"] == {"added": ["PF-900", "RF-900"], "removed": ["GR-004"], "changed": []}
    # added: moon (new to the queue), principal (context term), flagged (the model routed it anyway);
    # not the negated one, the door without context, nor the moon in quoted history
    assert (r["added"]["messages"], r["added"]["flagged"], r["added"]["queue_effect"]) == (3, 1, 2)
    assert (r["added"]["reviewed"], r["added"]["precision"]["successes"]) == (1, 1)
    by_rule = {(g["kind"], g["rule"]): g for g in r["by_rule"]}
    assert by_rule[("added", "PF-900")]["messages"] == 2 and by_rule[("added", "RF-900")]["messages"] == 1
    assert (
        by_rule[("added", "PF-900")]["precision"]["n"] == 1
        and by_rule[("added", "PF-900")]["claims_of_type"] == 1
    )
    # removed: the message only GR-004 routed, which a reviewer judged not a claim
    removed = by_rule[("removed", "GR-004")]
    assert (removed["messages"], removed["reviewed"], removed["claims"], removed["queue_effect"]) == (
        1,
        1,
        0,
        1,
    )
    # per claim type: the two forecast messages (one flagged and judged a forecast claim), the
    # risk-free one nobody reviewed, and the removed guaranteed-returns one judged not a claim
    by_type = {(g["kind"], g["claim_type"]): g for g in r["by_claim_type"]}
    assert set(by_type) == {
        ("added", "performance_forecast"),
        ("added", "risk_free"),
        ("removed", "guaranteed_returns"),
    }
    forecast = by_type[("added", "performance_forecast")]
    assert (forecast["messages"], forecast["flagged"], forecast["queue_effect"], forecast["reviewed"]) == (
        2,
        1,
        1,
        1,
    )
    assert (forecast["claims"], forecast["claims_of_type"], forecast["not_claims"]) == (1, 1, 0)
    assert (forecast["precision"]["successes"], forecast["precision"]["n"]) == (1, 1)
    assert forecast["precision_of_type"] == forecast["precision"]
    risk_free = by_type[("added", "risk_free")]
    assert (risk_free["messages"], risk_free["queue_effect"], risk_free["reviewed"]) == (1, 1, 0)
    assert risk_free["precision"]["n"] == risk_free["precision_of_type"]["n"] == 0
    gone = by_type[("removed", "guaranteed_returns")]
    assert (gone["messages"], gone["reviewed"], gone["claims"], gone["not_claims"]) == (1, 1, 0, 1)
    assert (gone["precision_of_type"]["successes"], gone["precision_of_type"]["n"]) == (0, 1)
    assert r["queue_change_per_day"] == pytest.approx((2 - 1) / 30, rel=1e-3)
    assert {s["match"] for s in r["sample"]} == {"to the moon", "bulletproof"}
    moon = next(s for s in r["sample"] if s["external_id"] == stored["moon"].external_id)
    assert moon["before"] + moon["match"] + moon["after"] == stored["moon"].body
    assert r["scan"]["candidates"] < r["messages"]
    assert (backtest.processed, backtest.total) == (7, 7)


def test_a_changed_rule_with_context_terms_added_is_backtested_with_the_precision_of_its_own_type(
    version, reviewer, staff_admin
):
    # given GR-004 (no context terms in the active set) and a draft that asks for a fund word near it
    active = RuleSet.objects.get(is_active=True)
    draft = rule_set_draft_create(
        base=active,
        user=staff_admin,
        note="GR-004 only near a fund word",
        change={"GR-004": {"context_terms": ("fund", "invest*")}},
    )
    now = timezone.now()
    at = now - timedelta(days=2)
    bodies = {
        "income": "You get assured income with us.",  # no fund word: the draft drops it
        "profits": "Locked-in profits for everyone.",  # no fund word either
        "fund": "Assured income from our fund.",  # routed by both: unchanged
        "asked": "Is the fund's income assured?",  # no GR-004 hit under either set
    }
    messages = {
        key: routed(version, received_at=at, score=0.1, route="rule_hit", body=body)
        for key, body in bodies.items()
    }
    decide(messages["income"], verdict="no_claim", at=at, reviewer=reviewer)
    # a reviewer judged the second one a claim, but of another type than the rule's
    decide(messages["profits"], verdict="claim", claim_code="risk_free", at=at, reviewer=reviewer)
    decide(messages["fund"], verdict="claim", claim_code="guaranteed_returns", at=at, reviewer=reviewer)

    # when
    backtest = rule_backtest_now(draft=draft, days=30)

    # then
    r = backtest.results
    assert backtest.status == "done", backtest.error
    assert r["rules"] == {"added": [], "removed": [], "changed": ["GR-004"]}
    assert (r["messages"], r["added"]["messages"], r["removed"]["messages"]) == (4, 0, 2)
    rule = {(g["kind"], g["rule"]): g for g in r["by_rule"]}[("removed", "GR-004")]
    assert (rule["messages"], rule["reviewed"], rule["claims"], rule["claims_of_type"]) == (2, 2, 1, 0)
    assert (rule["precision"]["successes"], rule["precision"]["n"]) == (1, 2)
    assert (rule["precision_of_type"]["successes"], rule["precision_of_type"]["n"]) == (0, 2)
    assert rule["precision_of_type"]["high"] < rule["precision"]["high"]  # its Wilson interval
    assert r["by_claim_type"] == [
        {
            "kind": "removed",
            "claim_type": "guaranteed_returns",
            **{k: rule[k] for k in rule if k not in ("kind", "rule", "claim_type")},
        }
    ]
    assert r["queue_change_per_day"] == pytest.approx(-2 / 30, rel=1e-3)
    # and the command prints the rule's own-type precision with the per-type lines
    text = io.StringIO()
    call_command("backtest_rules", "--draft", str(draft.pk), stdout=text)
    assert "guaranteed_returns claims 0 of 2" in text.getvalue()
    assert "Per claim type:" in text.getvalue()


def test_a_backtest_request_publishes_its_task_after_commit_to_the_default_queue(
    draft, staff_admin, django_capture_on_commit_callbacks
):
    from compliance_site.celery import app as celery_app
    from core import queues

    with mock.patch("monitoring.tasks.run_rule_backtest.apply_async") as apply_async:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            backtest = rule_backtest_request(draft=draft, user=staff_admin, days=30)
        assert not apply_async.called  # nothing is published before the commit
        assert len(callbacks) == 1
        callbacks[0]()

    apply_async.assert_called_once()
    options = apply_async.call_args.kwargs
    assert options["args"] == [backtest.pk] and options["retry"] is False
    route = celery_app.amqp.router.route(
        dict(options), "monitoring.tasks.run_rule_backtest", args=options["args"]
    )
    assert route["queue"].name == queues.DEFAULT


def test_a_backtest_whose_task_was_lost_is_published_again_by_the_sweep_and_then_computed(
    draft, stored, staff_admin, django_capture_on_commit_callbacks
):
    from monitoring.backtest import rule_backtests_sweep
    from monitoring.tasks import run_rule_backtest

    # given a backtest requested while the broker was down, a fresh one, and a finished one
    broker_down = mock.patch("monitoring.tasks.run_rule_backtest.apply_async", side_effect=ConnectionError)
    with broker_down, django_capture_on_commit_callbacks(execute=True):
        lost = rule_backtest_request(draft=draft, user=staff_admin, days=30)
        fresh = rule_backtest_request(draft=draft, user=staff_admin, days=30)
        done = rule_backtest_request(draft=draft, user=staff_admin, days=30)
    rule_backtest_run(backtest_id=done.pk)
    ten_minutes_ago = timezone.now() - timedelta(minutes=10)
    RuleSetBacktest.objects.filter(pk__in=[lost.pk, done.pk]).update(created_at=ten_minutes_ago)
    assert RuleSetBacktest.objects.get(pk=lost.pk).status == "pending"

    # when the sweep runs
    with mock.patch("monitoring.tasks.run_rule_backtest.apply_async") as apply_async:
        published = rule_backtests_sweep(older_than=timedelta(minutes=5))

    # then only the lost one is published again, and its task computes it
    assert published == 1
    assert [c.kwargs["args"] for c in apply_async.call_args_list] == [[lost.pk]]
    assert run_rule_backtest(lost.pk) == "done"
    assert RuleSetBacktest.objects.get(pk=lost.pk).results["added"]["messages"] == 3
    assert RuleSetBacktest.objects.get(pk=fresh.pk).status == "pending"
    with mock.patch("monitoring.tasks.run_rule_backtest.apply_async") as apply_async:
        assert rule_backtests_sweep(older_than=timedelta(minutes=5)) == 0  # nothing is left pending


def test_beat_runs_the_backtest_sweep_once_per_stuck_interval(settings):
    from monitoring.tasks import sweep_backtests

    entry = settings.CELERY_BEAT_SCHEDULE["sweep-backtests"]
    assert entry["task"] == sweep_backtests.name == "monitoring.tasks.sweep_backtests"
    assert entry["schedule"] == settings.BACKTEST_STUCK_AFTER_SECONDS


def test_running_a_finished_backtest_again_changes_nothing(draft, stored, staff_admin):
    backtest = rule_backtest_request(draft=draft, user=staff_admin, days=30)
    first = rule_backtest_run(backtest_id=backtest.pk)
    again = rule_backtest_run(backtest_id=backtest.pk)
    assert again.results == first.results and again.finished_at == first.finished_at


def test_a_draft_is_published_only_on_a_finished_backtest_against_the_active_version(
    draft, stored, staff_admin
):
    backtest = rule_backtest_request(draft=draft, user=staff_admin, days=30)
    with pytest.raises(RuleSetError, match="finished backtest"):
        rule_set_draft_publish(draft=draft, backtest=backtest, user=staff_admin)
    rule_backtest_run(backtest_id=backtest.pk)
    backtest.refresh_from_db()

    published = rule_set_draft_publish(draft=draft, backtest=backtest, user=staff_admin, note="on backtest")

    assert published.is_active and published.backtest == backtest
    assert set(published.rules.values_list("code", flat=True)) >= {"PF-900", "RF-900"}
    assert not published.rules.filter(code="GR-004").exists()
    draft.refresh_from_db()
    assert draft.published == published
    with pytest.raises(RuleSetError, match="already published"):
        rule_set_draft_publish(draft=draft, backtest=backtest, user=staff_admin)


def test_a_backtest_against_a_version_no_longer_active_cannot_be_published(draft, stored, staff_admin):
    backtest = rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=staff_admin, days=30).pk)
    publish_edit(base=draft.base, user=staff_admin, note="someone else's edit", remove=["RE-003"])

    with pytest.raises(RuleSetError, match="run the backtest again"):
        rule_set_draft_publish(draft=draft, backtest=backtest, user=staff_admin)
    assert not RuleSet.objects.filter(backtest=backtest).exists()


def test_a_roll_back_meanwhile_also_makes_a_backtest_stale(draft, stored, staff_admin):
    backtest = rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=staff_admin, days=30).pk)
    rule_set_roll_back(to=RuleSet.objects.get(version=1), user=staff_admin, reason="v2 missed too much")

    with pytest.raises(RuleSetError, match="run the backtest again"):
        rule_set_draft_publish(draft=draft, backtest=backtest, user=staff_admin)


def test_only_a_compliance_admin_drafts_or_backtests(draft, reviewer):
    with pytest.raises(RuleSetError, match="compliance admin"):
        rule_set_draft_create(base=draft.base, user=reviewer, note="x", add=[MOON])
    with pytest.raises(RuleSetError, match="compliance admin"):
        rule_backtest_request(draft=draft, user=reviewer)


@pytest.mark.parametrize("days", [0, 366, True])
def test_a_bad_period_is_refused_and_nothing_is_written(draft, staff_admin, days):
    with pytest.raises(RuleSetError, match="whole number of days"):
        rule_backtest_request(draft=draft, user=staff_admin, days=days)
    assert not RuleSetBacktest.objects.exists()


def test_the_command_prints_the_same_figures(draft, stored):
    out = io.StringIO()
    call_command("backtest_rules", "--draft", str(draft.pk), "--days", "30", "--json", stdout=out)
    report = json.loads(out.getvalue())

    stored_backtest = RuleSetBacktest.objects.get(pk=report["backtest"])
    assert report["added"] == stored_backtest.results["added"] and report["added"]["messages"] == 3
    text = io.StringIO()
    call_command("backtest_rules", "--draft", str(draft.pk), stdout=text)
    assert "The draft routes, the active rules do not: 3" in text.getvalue()


def test_the_command_refuses_an_unknown_draft():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no rule-set draft #999"):
        call_command("backtest_rules", "--draft", "999")


def test_the_draft_page_requests_a_backtest_shows_progress_then_the_results_and_publishes(
    client, draft, stored, staff_admin, django_capture_on_commit_callbacks
):
    client.force_login(staff_admin)
    page = reverse("monitoring:rule_draft", args=[draft.pk])
    assert "PF-900" in client.get(page).content.decode()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("monitoring:rule_draft_backtest", args=[draft.pk]), {"days": "30"})
    assert response.status_code == 302 and len(callbacks) == 1
    backtest = RuleSetBacktest.objects.get()
    html = client.get(page).content.decode()
    assert 'hx-trigger="every 1s"' in html and "Waiting for a worker" in html
    assert 'id="publish-form"' not in html

    rule_backtest_run(backtest_id=backtest.pk)
    progress = client.get(reverse("monitoring:backtest_progress", args=[backtest.pk]), HTTP_HX_REQUEST="true")
    assert progress.headers["HX-Refresh"] == "true"
    html = client.get(page).content.decode()
    assert '<mark class="rule">to the moon</mark>' in html
    # PF-900's one reviewed message is a forecast claim: the precision of the rule's own type
    assert html.count('class="precision-of-type">1 of 1: 100 %') == 2  # per rule and per claim type
    assert "+0.0 a day" in html and 'id="publish-form"' in html

    response = client.post(
        reverse("monitoring:rule_draft_publish", args=[draft.pk]), {"backtest": backtest.pk, "note": "go"}
    )
    assert response.status_code == 302
    published = RuleSet.objects.get(is_active=True)
    assert published.backtest == backtest
    admin_page = client.get(reverse("admin:scoring_ruleset_change", args=[published.pk])).content.decode()
    assert f"draft #{draft.pk}, backtest #{backtest.pk}" in admin_page


def test_a_published_drafts_page_does_not_ask_for_its_backtest_to_be_run_again(
    client, draft, stored, staff_admin
):
    # given a draft published on its backtest: the backtest compared it with the version it replaced
    backtest = rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=staff_admin, days=30).pk)
    published = rule_set_draft_publish(draft=draft, backtest=backtest, user=staff_admin, note="go")
    client.force_login(staff_admin)

    # when its page is opened
    response = client.get(reverse("monitoring:rule_draft", args=[draft.pk]))

    # then it says what was published, shows the figures, and asks for nothing more
    html = response.content.decode()
    assert response.status_code == 200
    assert "run it again before publishing" not in html and "no longer active" not in html
    assert f"Published as v{published.version} on backtest #{backtest.pk}." in html
    assert f"compared the draft with v{backtest.active.version}, the active version then" in html
    assert 'id="backtest-results"' in html and 'id="publish-form"' not in html


@pytest.mark.parametrize(
    ("post", "says"),
    [
        ({"backtest": None, "note": "go"}, "The form does not say which backtest to publish on"),
        ({"backtest": "?", "note": "go"}, "The form does not say which backtest to publish on"),
        ({"note": ""}, "This field is required."),
    ],
)
def test_a_publish_request_missing_a_field_says_what_is_missing(
    post, says, client, draft, stored, staff_admin
):
    backtest = rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=staff_admin, days=30).pk)
    post = {key: value for key, value in {"backtest": str(backtest.pk), **post}.items() if value is not None}
    client.force_login(staff_admin)

    response = client.post(reverse("monitoring:rule_draft_publish", args=[draft.pk]), post)

    assert response.status_code == 400
    assert says in response.content.decode()
    draft.refresh_from_db()
    assert draft.published is None


def test_the_rule_benchmark_times_the_backtest_on_seeded_messages_and_leaves_nothing_behind():
    from scoring.models import Message

    out = io.StringIO()
    call_command("bench_rules", "--n", "2", "--lengths", "300", "--backtest", "60", "--json", stdout=out)

    report = json.loads(out.getvalue())["backtest"]
    assert report["messages"] == 60
    for name in ("draft_few", "draft_all"):
        assert report[name]["scanned"] == 60 and report[name]["seconds"] >= 0
    assert report["draft_all"]["candidates"] >= report["draft_few"]["candidates"]
    assert not Message.objects.exists() and not RuleSetBacktest.objects.exists()


def test_the_benchmark_scans_every_seeded_message_however_long_the_seeding_took():
    from monitoring import bench_backtest

    # given: the benchmark's clock moves five days at every reading, as if seeding took that long
    real, readings = timezone.now(), []

    def slow_clock():
        readings.append(real + timedelta(days=5 * len(readings)))
        return readings[-1]

    # when
    with mock.patch.object(bench_backtest, "timezone", SimpleNamespace(now=slow_clock)):
        report = bench_backtest.bench_backtest(60, which=("few",))

    # then: the window starts where the seeding's did, so none of the oldest messages is left out
    assert len(readings) >= 3 and report["draft_few"]["scanned"] == 60


def test_the_backtest_reads_the_period_in_chunks_with_the_same_figures_and_rising_progress(
    draft, stored, staff_admin, monkeypatch
):
    import monitoring.backtest as engine

    whole = rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=staff_admin, days=30).pk)
    monkeypatch.setattr(engine, "CHUNK", 2)
    seen: list[tuple[int, int]] = []
    chunked = engine.backtest_compute(
        active=engine.set_specs(whole.active),
        draft=engine.draft_specs(whole.draft),
        since=whole.since,
        until=whole.until,
        progress=lambda processed, total: seen.append((processed, total)),
    )
    assert seen == [(2, 7), (4, 7), (6, 7), (7, 7)]
    for key in ("messages", "added", "removed", "by_rule", "queue_change_per_day"):
        assert chunked[key] == whole.results[key], key
    assert sorted(s["external_id"] for s in chunked["sample"]) == sorted(
        s["external_id"] for s in whole.results["sample"]
    )


def test_a_backtest_matched_in_two_processes_has_the_same_figures(
    draft, stored, staff_admin, monkeypatch, settings
):
    import monitoring.backtest as engine

    # given: the figures of the one-process scan
    whole = rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=staff_admin, days=30).pk)
    # when: every chunk of two messages is split with a helper process
    settings.BACKTEST_HELPER_MIN_MESSAGES = 1
    monkeypatch.setattr(engine, "CHUNK", 2)
    started = []
    monkeypatch.setattr(engine, "ScanHelper", lambda *a: started.append(a) or ScanHelper(*a))
    split = engine.backtest_compute(
        active=engine.set_specs(whole.active),
        draft=engine.draft_specs(whole.draft),
        since=whole.since,
        until=whole.until,
    )
    # then
    assert len(started) == 1
    for key in ("messages", "added", "removed", "by_rule", "by_claim_type", "queue_change_per_day"):
        assert split[key] == whole.results[key], key
    assert [s["external_id"] for s in split["sample"]] == [s["external_id"] for s in whole.results["sample"]]
    assert split["scan"]["candidates"] == whole.results["scan"]["candidates"]
    assert whole.results["added"]["messages"] and whole.results["removed"]["messages"]


def test_a_message_with_a_part_not_read_is_in_the_queue_whatever_the_rules_say(draft, version, staff_admin):
    # given: two messages with a part that could not be read (they go to review anyway): one a
    # new rule hits, one that only the dropped GR-004 routed
    unread = [
        {"name": "terms.txt", "content_type": "text/plain", "size": 9, "scored": False, "unreadable": True}
    ]
    at = timezone.now() - timedelta(days=3)
    moon = routed(version, received_at=at, score=0.1, route="unread_part", body="This coin goes to the moon.")
    assured = routed(
        version, received_at=at, score=0.1, route="rule_hit", body="You get assured income with us."
    )
    for message in (moon, assured):
        message.attachments = unread
        message.save(update_fields=["attachments"])

    # when
    backtest = rule_backtest_run(backtest_id=rule_backtest_request(draft=draft, user=staff_admin, days=30).pk)

    # then: each is counted, and neither changes the queue
    r = backtest.results
    assert (r["added"]["messages"], r["added"]["in_queue_anyway"], r["added"]["queue_effect"]) == (1, 1, 0)
    assert (r["removed"]["messages"], r["removed"]["in_queue_anyway"], r["removed"]["queue_effect"]) == (
        1,
        1,
        0,
    )
    assert r["queue_change_per_day"] == 0
