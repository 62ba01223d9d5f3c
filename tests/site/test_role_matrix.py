"""Every page and endpoint against every role of the brief's role table, anonymous included.

The matrix is data: add a `Route` row for each new page or API endpoint, naming the roles that
may use it. A row's check is the gate, not the page's business rules: an allowed role must not
be refused (a 400 or 409 from the page's own validation still counts as let through); every
other signed-in role must get 403 (405 for a method the page does not have); anonymous users
are sent to the login page (pages) or get 401/403 (API).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client, override_settings
from django.urls import get_resolver, reverse
from django.utils import timezone

from core.roles import Role
from monitoring.api_urls import ENDPOINTS as METRICS_ENDPOINTS
from scoring.models import Conversation, ModelComparison, RuleSet, RuleSetBacktest, RuleSetDraft
from tests.conftest import FAST_PASSWORD_HASHERS, PASSWORD
from tests.factories import ModelVersionFactory, ReviewDecisionFactory, UserFactory, reviewable_message

ANONYMOUS = "anonymous"
NO_ROLE = "no_role"
REVIEWER, AUDITOR, ADMIN, SERVICE = (r.value for r in Role)
ROLES = (ANONYMOUS, NO_ROLE, REVIEWER, AUDITOR, ADMIN, SERVICE)
SIGNED_IN = frozenset({NO_ROLE, REVIEWER, AUDITOR, ADMIN, SERVICE})
EVERYONE = SIGNED_IN | {ANONYMOUS}


@dataclass
class World:
    in_review: int
    escalated: int
    decided: int
    decision: int
    model_version: int
    comparison: int
    conversation: int
    draft: int = 0
    backtest: int = 0


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: Callable[[World], str]
    allowed: frozenset[str]
    kind: str = "page"  # "page" (login redirect), "api" (401/403), "admin" (Django admin login)
    data: dict | None = None


def url(name: str, *args: str) -> Callable[[World], str]:
    return lambda w: reverse(name, args=[getattr(w, a) for a in args])


R = frozenset
ROUTES: list[Route] = [
    Route("home", "get", url("home"), SIGNED_IN),
    Route("healthz", "get", url("healthz"), EVERYONE),
    Route("readyz", "get", url("readyz"), EVERYONE),
    Route("login", "get", url("login"), EVERYONE),
    Route("password_change", "get", url("password_change"), SIGNED_IN),
    Route("password_change_done", "get", url("password_change_done"), SIGNED_IN),
    Route("reviews:queue", "get", url("reviews:queue"), R({REVIEWER, ADMIN})),
    Route("reviews:queue", "post", url("reviews:queue"), R()),
    Route("reviews:next", "post", url("reviews:next"), R({REVIEWER})),
    Route("reviews:next", "get", url("reviews:next"), R()),
    Route("reviews:message", "get", url("reviews:message", "in_review"), R({REVIEWER, AUDITOR, ADMIN})),
    Route("reviews:message", "post", url("reviews:message", "in_review"), R()),
    Route("reviews:attention", "get", url("reviews:attention", "in_review"), R({REVIEWER, AUDITOR, ADMIN})),
    Route(
        "reviews:conversation",
        "get",
        url("reviews:conversation", "conversation"),
        R({REVIEWER, AUDITOR, ADMIN}),
    ),
    Route("reviews:conversation", "post", url("reviews:conversation", "conversation"), R()),
    Route("reviews:claim", "post", url("reviews:claim", "in_review"), R({REVIEWER})),
    Route("reviews:release", "post", url("reviews:release", "in_review"), R({REVIEWER})),
    Route(
        "reviews:decide",
        "post",
        url("reviews:decide", "in_review"),
        R({REVIEWER}),
        data={"verdict": "no_claim"},
    ),
    Route(
        "reviews:second_level",
        "post",
        url("reviews:second_level", "escalated"),
        R({ADMIN}),
        data={"verdict": "no_claim"},
    ),
    Route("reviews:correct", "post", url("reviews:correct", "decided"), R({ADMIN})),
    Route("reviews:escalations", "get", url("reviews:escalations"), R({ADMIN})),
    Route("reviews:escalations", "post", url("reviews:escalations"), R()),
    Route("reviews:records", "get", url("reviews:records"), R({AUDITOR, ADMIN})),
    Route("reviews:records", "post", url("reviews:records"), R()),
    Route("reviews:records_csv", "get", url("reviews:records_csv"), R({AUDITOR, ADMIN})),
    Route("reviews:records_csv", "post", url("reviews:records_csv"), R()),
    Route("reviews:record", "get", url("reviews:record", "decision"), R({AUDITOR, ADMIN})),
    Route("reviews:record", "post", url("reviews:record", "decision"), R()),
    Route("reviews:record", "delete", url("reviews:record", "decision"), R()),
    Route("reviews:audit_chain", "get", url("reviews:audit_chain"), R({AUDITOR, ADMIN})),
    Route("reviews:audit_chain", "post", url("reviews:audit_chain"), R()),
    Route("reviews:training_data", "get", url("reviews:training_data"), R({ADMIN})),
    Route("reviews:training_data", "post", url("reviews:training_data"), R()),
    Route("reviews:models", "get", url("reviews:models"), R({AUDITOR, ADMIN})),
    Route("reviews:models", "post", url("reviews:models"), R()),
    Route(
        "reviews:models_activate", "post", url("reviews:models_activate"), R({ADMIN}), data={"reason": "x"}
    ),
    Route("reviews:models_threshold", "post", url("reviews:models_threshold"), R({ADMIN})),
    Route("reviews:models_compare", "post", url("reviews:models_compare"), R({ADMIN})),
    Route("reviews:models_shadow", "post", url("reviews:models_shadow", "model_version"), R({ADMIN})),
    Route("reviews:model_detail", "get", url("reviews:model_detail", "model_version"), R({AUDITOR, ADMIN})),
    Route("reviews:comparison", "get", url("reviews:comparison", "comparison"), R({AUDITOR, ADMIN})),
    # The REST API: 401/403 instead of a login redirect.
    # An ingest service reads the status of its own feed's messages, not messages (issue 17).
    Route("api-messages", "get", url("api-messages"), R({REVIEWER, AUDITOR, ADMIN}), kind="api"),
    Route("api-messages", "post", url("api-messages"), R({ADMIN, SERVICE}), kind="api"),
    Route("api-messages-bulk", "post", url("api-messages-bulk"), R({ADMIN, SERVICE}), kind="api"),
    Route("api-messages-bulk", "get", url("api-messages-bulk"), R(), kind="api"),
    Route("api-messages-raw", "get", url("api-messages-raw"), R(), kind="api"),
    Route(
        "api-message-detail",
        "get",
        url("api-message-detail", "in_review"),
        R({REVIEWER, AUDITOR, ADMIN}),
        kind="api",
    ),
    Route("api-message-statuses", "get", url("api-message-statuses"), R({ADMIN, SERVICE}), kind="api"),
    Route("api-message-statuses", "post", url("api-message-statuses"), R(), kind="api"),
    # Another feed's message is a 404 to the feeds allowed in: let through, not refused.
    Route(
        "api-message-status", "get", url("api-message-status", "in_review"), R({ADMIN, SERVICE}), kind="api"
    ),
    Route("api-message-detail", "delete", url("api-message-detail", "in_review"), R(), kind="api"),
    Route("api-message-detail", "put", url("api-message-detail", "in_review"), R(), kind="api"),
    Route("api-schema", "get", url("api-schema"), SIGNED_IN, kind="api"),
    Route("api-docs", "get", url("api-docs"), SIGNED_IN, kind="api"),
    Route("explanations:how_attention_works", "get", url("explanations:how_attention_works"), SIGNED_IN),
    Route("explanations:faithfulness", "get", url("explanations:faithfulness"), R({ADMIN})),
    Route("explanations:faithfulness", "post", url("explanations:faithfulness"), R()),
    Route("monitoring:dashboard", "get", url("monitoring:dashboard"), R({ADMIN})),
    Route("monitoring:dashboard", "post", url("monitoring:dashboard"), R()),
    Route("monitoring:failed", "get", url("monitoring:failed"), R({ADMIN})),
    Route("monitoring:failed", "post", url("monitoring:failed"), R()),
    Route(
        "monitoring:failed_retry",
        "post",
        url("monitoring:failed_retry", "in_review"),
        R({ADMIN}),
        data={"reason": "x"},
    ),
    Route("monitoring:failed_retry", "get", url("monitoring:failed_retry", "in_review"), R()),
    Route("monitoring:reviewers", "get", url("monitoring:reviewers"), R({ADMIN})),
    Route("monitoring:reviewers", "post", url("monitoring:reviewers"), R()),
    Route("monitoring:rule_drafts", "get", url("monitoring:rule_drafts"), R({ADMIN})),
    Route("monitoring:rule_draft", "get", url("monitoring:rule_draft", "draft"), R({ADMIN})),
    Route("monitoring:rule_draft", "post", url("monitoring:rule_draft", "draft"), R()),
    Route(
        "monitoring:rule_draft_backtest",
        "post",
        url("monitoring:rule_draft_backtest", "draft"),
        R({ADMIN}),
        data={"days": "30"},
    ),
    Route("monitoring:rule_draft_publish", "post", url("monitoring:rule_draft_publish", "draft"), R({ADMIN})),
    Route("monitoring:backtest_progress", "get", url("monitoring:backtest_progress", "backtest"), R({ADMIN})),
    *(
        Route(name, method, url(name), R({ADMIN}) if method == "get" else R(), kind="api")
        for name in METRICS_ENDPOINTS
        for method in ("get", "post")
    ),
    Route("admin:index", "get", url("admin:index"), R({ADMIN}), kind="admin"),
    Route(
        "admin:reviews_reviewdecision_changelist",
        "get",
        url("admin:reviews_reviewdecision_changelist"),
        R({ADMIN}),
        kind="admin",
    ),
    Route(
        "admin:reviews_reviewdecision_delete",
        "post",
        url("admin:reviews_reviewdecision_delete", "decision"),
        R(),
        kind="admin",
    ),
    Route(
        "admin:reviews_reviewdecision_change",
        "post",
        url("admin:reviews_reviewdecision_change", "decision"),
        R(),
        kind="admin",
    ),
]


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory) -> World:
    """Built once for the module's 570 cases, in a transaction rolled back at its end; each case
    runs in a savepoint of its own inside it (pytest-django's `db`), so what one case writes (an
    allowed POST) is gone before the next. It is built before the per-test fixtures of
    tests/conftest.py apply, so it sets what they set: the tests' password hasher (its users'
    passwords check as any test's do) and a checkpoint log of its own."""
    built_with = override_settings(
        PASSWORD_HASHERS=FAST_PASSWORD_HASHERS,
        AUDIT_CHECKPOINT_DIR=tmp_path_factory.mktemp("audit-checkpoints"),
    )
    with django_db_blocker.unblock(), transaction.atomic():
        with built_with:
            built = _build_world()
        yield built
        transaction.set_rollback(True)


def _build_world() -> World:
    author = UserFactory(username="matrix_author", role=Role.REVIEWER)
    in_review = reviewable_message(attention=True)
    escalated = ReviewDecisionFactory(reviewer=author, verdict="escalate").message
    decision = ReviewDecisionFactory(reviewer=author, verdict="no_claim")
    version = in_review.routing_prediction.model_version
    comparison = ModelComparison.objects.create(baseline=version, candidate=ModelVersionFactory())
    conversation = Conversation.objects.create(kind=Conversation.Kind.CHAT, key="chat:matrix", title="matrix")
    active = RuleSet.objects.get(is_active=True)
    draft = RuleSetDraft.objects.create(base=active, rules=[], note="matrix")
    now = timezone.now()
    backtest = RuleSetBacktest.objects.create(draft=draft, active=active, days=1, since=now, until=now)
    return World(
        in_review.pk,
        escalated.pk,
        decision.message_id,
        decision.pk,
        version.pk,
        comparison.pk,
        conversation.pk,
        draft.pk,
        backtest.pk,
    )


def client_for(role: str) -> Client:
    client = Client()
    if role == ANONYMOUS:
        return client
    user = UserFactory(username=f"matrix_{role}", role=None if role == NO_ROLE else role)
    if role == ADMIN:
        user.is_staff = True  # what create_user gives a compliance admin
        user.save()
    client.force_login(user)
    return client


def refused(route: Route, role: str, response) -> bool:
    location = response.get("Location", "")
    if role == ANONYMOUS:
        if route.kind == "api":
            return response.status_code in (401, 403)
        if route.kind == "admin":
            return response.status_code == 302 and "/admin/login/" in location
        return response.status_code == 302 and location.startswith(reverse("login"))
    if route.kind == "admin" and response.status_code == 302 and "/admin/login/" in location:
        return True
    return response.status_code in (403, 405)


CASES = [
    pytest.param(route, role, id=f"{route.method}-{route.name}-{role}") for route in ROUTES for role in ROLES
]


@pytest.mark.parametrize(("route", "role"), CASES)
def test_role_matrix(route: Route, role: str, world: World, db):
    client = client_for(role)
    path = route.path(world)
    response = getattr(client, route.method)(path, route.data or {})
    if role in route.allowed:
        assert not refused(route, role, response), f"{role} was refused {route.method.upper()} {path}"
        assert response.status_code not in (401, 403, 405, 500)
    else:
        assert refused(route, role, response), (
            f"{role} was let through {route.method.upper()} {path}: {response.status_code}"
        )


def test_every_monitoring_page_and_metrics_endpoint_has_a_row_in_the_matrix():
    names = {
        f"monitoring:{name}"
        for name in get_resolver().namespace_dict["monitoring"][1].reverse_dict
        if isinstance(name, str)
    }
    metrics = {pattern.name for pattern in import_module("monitoring.api_urls").urlpatterns}
    covered = {route.name for route in ROUTES}
    assert (names | metrics) - covered == set()


def test_every_review_page_has_a_row_in_the_matrix():
    names = {
        f"reviews:{name}"
        for name in get_resolver().namespace_dict["reviews"][1].reverse_dict
        if isinstance(name, str)
    }
    covered = {route.name for route in ROUTES}
    assert names - covered == set()


@pytest.mark.django_db
def test_auditors_are_refused_every_post(world):
    client = client_for(AUDITOR)
    for route in ROUTES:
        path = route.path(world)
        response = client.post(path, route.data or {})
        # Their own account is the one thing an auditor may change: signing in, their password.
        assert refused(route, AUDITOR, response) or route.name in ("login", "password_change"), path


READ_ONLY_PAGES = (
    "reviews:records",
    "reviews:records_csv",
    "reviews:record",
    "reviews:audit_chain",
    "reviews:escalations",
    "reviews:message",
    "reviews:attention",
    "reviews:conversation",
    "reviews:training_data",
)


@pytest.mark.django_db
@pytest.mark.parametrize("name", READ_ONLY_PAGES)
def test_a_post_to_a_read_only_page_by_a_role_that_reads_it_is_405_not_403(world, name):
    """The page takes no writes from anybody: the method is wrong, not the role."""
    route = next(r for r in ROUTES if r.name == name and r.method == "get")
    for role in sorted(route.allowed & SIGNED_IN):
        response = client_for(role).post(route.path(world))
        assert response.status_code == 405, (role, name, response.status_code)


def test_the_world_is_built_with_the_tests_password_hasher(world, db):
    """Its users' passwords check as any test's do (the world is built before the per-test
    settings of tests/conftest.py apply): a row that signs in by password would be let in."""
    author = get_user_model().objects.get(username="matrix_author")
    assert author.password.startswith("md5$") and author.check_password(PASSWORD)
