"""Production settings and browser-side safety: deploy checks, cookies, HSTS, the
Content-Security-Policy, no inline scripts, and escaping of message text everywhere."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.factories import ReviewDecisionFactory, UserFactory, reviewable_message

ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = '<script>alert("pwned")</script><img src=x onerror="alert(2)">'


def production_env(**extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "QA_SAMPLE_SALT": secrets.token_urlsafe(64),
        "AUDIT_CHECKPOINT_KEY": secrets.token_urlsafe(48),
        "ALLOWED_HOSTS": "claimwatch.example",
    }
    env.update(extra)
    return env


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_debug_off_and_a_strong_secret_key():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_debug_off_without_a_secret_key_refuses_to_start():
    env = production_env()
    env.pop("SECRET_KEY")
    result = run_manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def import_settings(**env: str) -> subprocess.CompletedProcess:
    """Import the settings module alone (no app) in an environment of exactly `env`."""
    base = {"PATH": os.environ.get("PATH", ""), "CLAIMWATCH_VAR_DIR": str(settings.VAR_DIR)}
    return subprocess.run(
        [sys.executable, "-c", "import compliance_site.settings as s; print('DEBUG', s.DEBUG)"],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def env_example() -> dict[str, str]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_with_no_environment_debug_is_off_and_a_secret_key_is_required():
    result = import_settings()

    assert result.returncode != 0
    assert "SECRET_KEY is required with DEBUG off" in result.stderr
    assert "DEBUG True" in import_settings(DEBUG="1").stdout  # what make run and the tests set


@pytest.mark.parametrize("debug", ["0", "1"])
def test_the_placeholder_secrets_of_env_example_are_refused(debug):
    example = env_example()
    strong = secrets.token_urlsafe(50)

    key = import_settings(DEBUG=debug, SECRET_KEY=example["SECRET_KEY"], QA_SAMPLE_SALT=strong)
    salt = import_settings(DEBUG=debug, SECRET_KEY=strong, QA_SAMPLE_SALT=example["QA_SAMPLE_SALT"])

    assert key.returncode != 0 and "SECRET_KEY is the placeholder of .env.example" in key.stderr
    assert salt.returncode != 0 and "QA_SAMPLE_SALT is the placeholder of .env.example" in salt.stderr


def test_debug_off_needs_a_qa_sample_salt_of_its_own():
    key = secrets.token_urlsafe(50)

    missing = import_settings(DEBUG="0", SECRET_KEY=key)
    same = import_settings(DEBUG="0", SECRET_KEY=key, QA_SAMPLE_SALT=key)
    development = import_settings(
        DEBUG="0", SECRET_KEY=key, QA_SAMPLE_SALT=settings.DEVELOPMENT_QA_SAMPLE_SALT
    )

    assert "QA_SAMPLE_SALT is required with DEBUG off" in missing.stderr
    assert "QA_SAMPLE_SALT must be a secret of its own" in same.stderr
    assert "QA_SAMPLE_SALT is the development default" in development.stderr
    accepted = import_settings(
        DEBUG="0", SECRET_KEY=key, QA_SAMPLE_SALT=key[::-1], AUDIT_CHECKPOINT_KEY=secrets.token_urlsafe(48)
    )
    assert accepted.returncode == 0, accepted.stderr


def test_debug_off_turns_on_secure_cookies_hsts_and_https():
    names = [
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SESSION_COOKIE_HTTPONLY",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_SSL_REDIRECT",
        "X_FRAME_OPTIONS",
        "DEBUG",
    ]
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        f"print(json.dumps({{k: getattr(s, k) for k in {names!r}}}))"
    )
    env = production_env(DJANGO_SETTINGS_MODULE="compliance_site.settings")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_SSL_REDIRECT": True,
        "X_FRAME_OPTIONS": "DENY",
        "DEBUG": False,
    }


SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.I)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def inline_script_problems(html: str) -> list[str]:
    problems = []
    for attrs in SCRIPT_TAG.findall(html):
        if "src=" not in attrs and 'type="application/json"' not in attrs:
            problems.append(f"inline <script{attrs}>")
    problems += [f"inline handler: {m.group()[:80]}" for m in INLINE_HANDLER.finditer(html)]
    if re.search(r'href\s*=\s*["\']\s*javascript:', html, re.I):
        problems.append("javascript: URL")
    return problems


def test_no_template_contains_an_inline_script_or_event_handler():
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert templates
    problems = {str(p.relative_to(ROOT)): inline_script_problems(p.read_text()) for p in templates}
    assert {path: found for path, found in problems.items() if found} == {}


def test_every_script_lives_in_static_js_or_a_vendored_package():
    for path in (ROOT / "templates").rglob("*.html"):
        for src in re.findall(r"<script[^>]*src=\"\{% static '([^']+)' %\}\"", path.read_text()):
            assert src.startswith(("js/", "vendor/")), (path, src)


@pytest.mark.django_db
def test_pages_send_a_csp_that_forbids_inline_and_foreign_scripts(client):
    user = UserFactory(username="csp_reviewer", role="reviewer")
    client.force_login(user)
    response = client.get(reverse("reviews:queue"))
    policy = response["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["style-src"] == "'self'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    # Style attributes: only plotly's two constant ones, each by its hash.
    assert directives["style-src-attr"].split() == [
        "'unsafe-hashes'",
        "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='",  # the empty attribute
        "'sha256-AR/cKIZjWPcPmBUPDA6oti9XBiTbJvz0Cro2J1VzzS8='",  # heat-map cells kept crisp
    ]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.django_db
def test_a_script_payload_is_escaped_on_every_page_that_shows_message_text(client):
    reviewer = UserFactory(username="esc_reviewer", role="reviewer")
    admin = UserFactory(username="esc_admin", role="compliance_admin")
    message = reviewable_message(body=PAYLOAD + " guaranteed returns", attention=True, external_id=PAYLOAD)
    decision = ReviewDecisionFactory(
        reviewer=reviewer, message=message, verdict="escalate", escalation_reason=PAYLOAD, note=PAYLOAD
    )
    client.force_login(admin)
    pages = [
        reverse("reviews:queue"),
        reverse("reviews:message", args=[message.pk]),
        reverse("reviews:escalations"),
        reverse("reviews:records") + "?q=" + "%3Cscript%3E",
        reverse("reviews:record", args=[decision.pk]),
    ]
    for url in pages:
        html = client.get(url).content.decode()
        assert "<script>alert" not in html, url
        assert "<img src=x" not in html, url
        assert inline_script_problems(html) == [], url


def test_plotly_is_served_from_our_static_files_not_a_cdn():
    from django.contrib.staticfiles import finders

    assert finders.find("vendor/plotly/plotly.min.js")
    assert "cdn" not in " ".join(str(d) for d in settings.STATICFILES_DIRS).lower()
