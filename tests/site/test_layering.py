"""The floors of the project, read from every module's imports (with `ast`: module-level and
function-level imports alike; migrations left out, they copy what they need).

- `core` is the ground floor: roles, access helpers, DRF permissions, the API's error body,
  parsers, throttling, authentication, the client's address, database and process helpers. It
  imports Django, DRF and the standard library, and no project app.
- `scoring` and `explanations` never import `reviews`, `monitoring` or `governance` (the apps
  above them).
- `compliance_site` is the roof (settings, urls, the home page, health, the API schema, celery,
  wsgi): no app imports it, except its settings (`compliance_site.settings`, though
  `django.conf.settings` is the way to read them) and the celery app object
  (`compliance_site.celery`, which a command that starts or inspects workers needs). Tests may
  import anything.

An edge that breaks a rule and cannot be fixed yet is listed in KNOWN_EXCEPTIONS, with why: the
test fails on any other offender, and on an exception that no longer occurs (so the list only
shrinks)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

APPS = ("core", "compliance_site", "scoring", "explanations", "reviews", "monitoring", "governance")

# importer app -> the project apps it must not import.
FORBIDDEN = {
    "core": set(APPS) - {"core"},
    "scoring": {"reviews", "monitoring", "governance"},
    "explanations": {"reviews", "monitoring", "governance"},
}
ROOF = "compliance_site"
ROOF_ALLOWED = ("compliance_site.settings", "compliance_site.celery")

# (importing file, imported module) pairs allowed for now, each with why and where it goes. None
# today: the device check's command, which activates the model it trains, is governance's.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every absolute module name `path` imports, with its line (relative imports are within the
    importer's own package, so they cross no floor)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in APPS:
                # `from compliance_site import celery`: the names are the app's modules.
                found.extend((f"{node.module}.{alias.name}", node.lineno) for alias in node.names)
            else:
                found.append((node.module, node.lineno))
    return found


def _app_modules() -> list[tuple[str, Path]]:
    modules = []
    for app in APPS:
        base = ROOT / app
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if "migrations" in path.relative_to(ROOT).parts:
                continue
            modules.append((app, path))
    return modules


def _offences() -> list[tuple[str, str, int, str]]:
    """(file, imported module, line, rule) for every import that breaks a rule."""
    offences = []
    for app, path in _app_modules():
        rel = path.relative_to(ROOT).as_posix()
        for module, line in _imports(path):
            top = module.split(".")[0]
            if top not in APPS or top == app:
                continue
            if top in FORBIDDEN.get(app, ()):
                offences.append((rel, module, line, f"{app} must not import {top}"))
            elif top == ROOF and not module.startswith(ROOF_ALLOWED):
                offences.append((rel, module, line, f"no app imports {ROOF} (but its settings and celery)"))
    return offences


def test_core_is_an_installed_app_without_models():
    from django.apps import apps

    config = apps.get_app_config("core")
    assert list(config.get_models()) == []
    assert not (ROOT / "core" / "models.py").exists()


def test_the_floors_hold():
    offences = [o for o in _offences() if (o[0], o[1]) not in KNOWN_EXCEPTIONS]
    assert not offences, "imports that break the layering:\n" + "\n".join(
        f"  {file}:{line} imports {module} ({rule})" for file, module, line, rule in offences
    )


def test_known_exceptions_still_occur():
    """An exception that was fixed leaves the list (the list only shrinks)."""
    seen = {(o[0], o[1]) for o in _offences()}
    stale = sorted(KNOWN_EXCEPTIONS - seen)
    assert not stale, f"fixed, remove from KNOWN_EXCEPTIONS: {stale}"


def test_the_checker_sees_function_level_imports(tmp_path):
    """The rule reads imports inside functions too (a lazy import is an edge all the same)."""
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    from reviews.models import ReviewDecision\n    import monitoring.backtest\n"
        "    from compliance_site import views\n"
    )
    assert [name for name, _ in _imports(module)] == [
        "reviews.models",
        "monitoring.backtest",
        "compliance_site.views",
    ]


# Pure computation (CONVENTIONS: "Pure computation stays pure"): these modules import no Django,
# so they are testable, and usable, without a database or settings.
PURE_MODULES = (
    "monitoring.agreement",
    "monitoring.stats",
    "scoring.backtest",
    "scoring.rules",
    "scoring.text",
)


@pytest.mark.parametrize("module", PURE_MODULES)
def test_a_pure_module_loads_no_django_module(module):
    code = (
        f"import sys, {module}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', 'celery')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},  # no DJANGO_SETTINGS_MODULE, nothing inherited
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"{module} loads {result.stdout.strip()}"
