import io
import sys

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from knox.models import AuthToken
from rest_framework.test import APIClient

from core.roles import Role, has_role
from tests.conftest import PASSWORD
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
STRONG = "plum-orbit-canvas-41"


def create_user(*args, stdin: str | None = None, monkeypatch=None) -> str:
    out = io.StringIO()
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    call_command("create_user", *args, stdout=out)
    return out.getvalue()


def test_create_user_makes_a_reviewer_with_a_password_from_stdin(monkeypatch):
    out = create_user(
        "nina", "--role", "reviewer", "--password-stdin", stdin=STRONG + "\n", monkeypatch=monkeypatch
    )
    user = User.objects.get(username="nina")
    assert "Created reviewer nina." in out
    assert has_role(user, Role.REVIEWER)
    assert user.check_password(STRONG)
    assert not user.is_staff


def test_a_compliance_admin_gets_the_admin_site(monkeypatch):
    create_user(
        "cora", "--role", "compliance_admin", "--password-stdin", stdin=STRONG, monkeypatch=monkeypatch
    )
    assert User.objects.get(username="cora").is_staff


def test_an_ingest_service_account_gets_a_token_printed_once_and_no_password():
    out = create_user("ingest_bot2", "--role", "ingest_service")
    user = User.objects.get(username="ingest_bot2")
    token = out.split("API token (shown once, keep it secret): ")[1].split()[0]
    stored = AuthToken.objects.get(user=user)
    assert token not in (stored.digest, stored.token_key) and stored.token_key in out
    assert not user.has_usable_password()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/messages/status/").status_code == 200


@pytest.mark.parametrize(
    ("args", "stdin", "error"),
    [
        (["weak", "--role", "reviewer", "--password-stdin"], "password\n", "Password refused"),
        (["blank", "--role", "auditor", "--password-stdin"], "\n", "password is empty"),
        (["bad name!", "--role", "auditor", "--password-stdin"], STRONG, "valid username"),
        (["mail", "--role", "auditor", "--email", "not-an-email", "--password-stdin"], STRONG, "valid email"),
        (["svc", "--role", "ingest_service", "--password-stdin"], STRONG, "token only"),
        (["who", "--role", "wizard"], None, "invalid choice"),
    ],
)
def test_create_user_refuses_bad_input_and_creates_nothing(monkeypatch, args, stdin, error):
    before = User.objects.count()
    with pytest.raises(CommandError, match=error):
        create_user(*args, stdin=stdin, monkeypatch=monkeypatch)
    assert User.objects.count() == before


def test_create_user_refuses_an_existing_name(monkeypatch, reviewer):
    with pytest.raises(CommandError, match="already exists; nothing was changed"):
        create_user(
            reviewer.username, "--role", "auditor", "--password-stdin", stdin=STRONG, monkeypatch=monkeypatch
        )
    assert not has_role(User.objects.get(pk=reviewer.pk), Role.AUDITOR)


def test_create_user_without_a_terminal_asks_for_password_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(CommandError, match="--password-stdin"):
        call_command("create_user", "quiet", "--role", "reviewer", stdout=io.StringIO())


def test_signing_in_lands_on_the_role_aware_home_page(reviewer):
    client = Client()
    response = client.post(
        reverse("login"), {"username": reviewer.username, "password": PASSWORD}, follow=True
    )
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == reverse("home")
    assert "Review next" in html
    assert "Decision records" not in html


def test_the_home_page_sends_anonymous_visitors_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(
    ("role", "present", "absent"),
    [
        (Role.REVIEWER, ["Review next", "Review queue"], ["Decision records", "Escalations"]),
        (Role.AUDITOR, ["Decision records", "Audit chain"], ["Review next", "Review queue", "Escalations"]),
        (Role.COMPLIANCE_ADMIN, ["Escalations", "Decision records", "Review queue"], ["Review next"]),
        (Role.INGEST_SERVICE, ["service account"], ["Review queue", "Decision records"]),
        (None, ["no role yet"], ["Review queue", "Decision records"]),
    ],
)
def test_navigation_and_home_page_follow_the_role(role, present, absent):
    client = Client()
    client.force_login(UserFactory(role=role))
    html = client.get("/").content.decode()
    for text in present:
        assert text in html
    for text in absent:
        assert text not in html


def test_logout_is_a_post_and_ends_the_session(reviewer_client):
    assert reviewer_client.get(reverse("logout")).status_code == 405
    assert reviewer_client.post(reverse("logout")).status_code == 302
    assert reviewer_client.get(reverse("reviews:queue")).status_code == 302


def test_a_user_changes_their_password(reviewer):
    client = Client()
    client.post(reverse("login"), {"username": reviewer.username, "password": PASSWORD})
    response = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": STRONG, "new_password2": STRONG},
    )
    assert response.status_code == 302 and response["Location"] == reverse("password_change_done")
    reviewer.refresh_from_db()
    assert reviewer.check_password(STRONG)


def test_a_weak_new_password_is_refused_with_the_reason(reviewer_client):
    response = reviewer_client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": "123", "new_password2": "123"},
    )
    assert response.status_code == 200
    assert "too short" in response.content.decode()


def test_repeated_failed_logins_lock_the_account_from_that_address(settings, reviewer, second_reviewer):
    settings.AXES_FAILURE_LIMIT = 3
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(3):
        response = client.post(reverse("login"), {"username": reviewer.username, "password": "wrong"})
    assert response.status_code == 429
    # Even the right password is refused while the lock lasts.
    locked = client.post(reverse("login"), {"username": reviewer.username, "password": PASSWORD})
    assert locked.status_code == 429
    assert "Too many failed sign-in attempts" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another account from the same address is not locked out.
    other = client.post(reverse("login"), {"username": second_reviewer.username, "password": PASSWORD})
    assert other.status_code == 302


def test_a_failed_login_below_the_limit_shows_the_form_error(reviewer):
    response = Client().post(reverse("login"), {"username": reviewer.username, "password": "wrong"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_failed_logins_spread_over_many_addresses_lock_the_account(settings, reviewer):
    settings.AXES_FAILURE_LIMIT = 3
    for i in range(3):
        Client(REMOTE_ADDR=f"203.0.113.{i}").post(
            reverse("login"), {"username": reviewer.username, "password": "wrong"}
        )

    locked = Client(REMOTE_ADDR="198.51.100.50").post(
        reverse("login"), {"username": reviewer.username, "password": PASSWORD}
    )

    assert locked.status_code == 429


def test_behind_a_trusted_proxy_the_lock_reads_the_clients_address_not_the_proxys(settings, reviewer):
    from axes.models import AccessAttempt

    settings.TRUSTED_PROXY_COUNT = 1
    Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.7").post(
        reverse("login"), {"username": reviewer.username, "password": "wrong"}
    )
    settings.TRUSTED_PROXY_COUNT = 0
    Client(REMOTE_ADDR="10.0.0.3", HTTP_X_FORWARDED_FOR="198.51.100.8").post(
        reverse("login"), {"username": reviewer.username, "password": "wrong"}
    )

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7", "10.0.0.3"}
