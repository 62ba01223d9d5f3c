"""python manage.py simulate_traffic [--days 60] [--drift-day 30] [--reviewers 3] [--per-day N]
[--seed S] [--days-ago N] [--demo] [--if-empty] [--json]

Pushes simulated traffic through the real pipeline in this process (see monitoring.simulation)
and prints what it did and what the monitoring shows for the drifted claim types: their
disagreement before and after the drift day, and the alerts that fired."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import date, timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from monitoring import selectors
from monitoring.errors import SimulationError
from monitoring.simulation import DEMO, SimulationConfig, simulate
from monitoring.timeline import DAY, WEEK
from scoring.models import Message

DEFAULTS = SimulationConfig()


def drift_effect(*, drift_day: str, drift_types: tuple[str, ...]) -> dict:
    """Per claim type: disagreement pooled before and from the drift day, and the alerts that
    fired (by day and by week) for the active model version."""
    version = selectors.version_resolve(None)
    result: dict = {"per_claim_type": {}, "alerts": {}}
    if version is None:
        return result
    cut = date.fromisoformat(drift_day) if drift_day != "none" else date.max
    daily = selectors.disagreement(version=version, period=DAY)
    for series in daily["series"]:
        before = [p for p in series["points"] if date.fromisoformat(p["start"]) < cut]
        after = [p for p in series["points"] if date.fromisoformat(p["start"]) >= cut]

        def pooled(points: list[dict]) -> dict:
            n = sum(p["n"] for p in points)
            x = sum(p["disagreements"] for p in points)
            return {"n": n, "disagreements": x, "rate": x / n if n else None}

        result["per_claim_type"][series["claim_type"]] = {
            "drifted": series["claim_type"] in drift_types,
            "before": pooled(before),
            "after": pooled(after),
        }
    for period in (DAY, WEEK):
        alerts = selectors.alerts(period=period, version=version)
        result["alerts"][period] = [
            {"claim_type": a["claim_type"], "start": a["start"], "rate": a["rate"], "n": a["n"]}
            for a in alerts
        ]
    return result


class Command(BaseCommand):
    help = "Simulate traffic with drift through the real pipeline (scoring, explanations, reviews)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--days", type=int, default=None, help=f"simulated days (default {DEFAULTS.days})"
        )
        parser.add_argument(
            "--drift-day",
            type=int,
            default=None,
            help=f"first day of drift phrasings (default {DEFAULTS.drift_day})",
        )
        parser.add_argument("--reviewers", type=int, default=None, help=f"default {DEFAULTS.reviewers}")
        parser.add_argument(
            "--per-day",
            type=int,
            default=None,
            help=f"ordinary messages per day (default {DEFAULTS.per_day})",
        )
        parser.add_argument(
            "--drift-per-day",
            type=int,
            default=None,
            help=f"drift claims per day from the drift day (default {DEFAULTS.drift_per_day})",
        )
        parser.add_argument(
            "--drift-types",
            default=None,
            help=f"comma-separated claim types that drift (default {','.join(DEFAULTS.drift_types)})",
        )
        parser.add_argument("--claim-rate", type=float, default=None, help=f"default {DEFAULTS.claim_rate}")
        parser.add_argument(
            "--qa-rate",
            type=float,
            default=None,
            help=f"QA sample rate of the run (default {DEFAULTS.qa_rate}; see monitoring.simulation)",
        )
        parser.add_argument(
            "--error-rate", type=float, default=None, help=f"reviewer error (default {DEFAULTS.error_rate})"
        )
        parser.add_argument("--seed", type=int, default=None, help=f"default {DEFAULTS.seed}")
        parser.add_argument(
            "--demo",
            action="store_true",
            help="the small run of `make run` (monitoring.simulation.DEMO): 14 days, drift from day 7",
        )
        parser.add_argument(
            "--days-ago",
            type=int,
            default=0,
            help="end the simulated days this many days before yesterday (default 0), so that a later "
            "run can continue the story: decisions must stay in time order",
        )
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="do nothing when the database already holds messages (what `make run` uses)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def _config(self, options: dict) -> SimulationConfig:
        base = DEMO if options["demo"] else DEFAULTS
        changes = {}
        for option, name in (
            ("days", "days"),
            ("drift_day", "drift_day"),
            ("reviewers", "reviewers"),
            ("per_day", "per_day"),
            ("drift_per_day", "drift_per_day"),
            ("claim_rate", "claim_rate"),
            ("qa_rate", "qa_rate"),
            ("error_rate", "error_rate"),
            ("seed", "seed"),
        ):
            if options[option] is not None:
                changes[name] = options[option]
        if options["drift_types"] is not None:
            changes["drift_types"] = tuple(
                code.strip() for code in options["drift_types"].split(",") if code.strip()
            )
        return replace(base, **changes)

    def handle(self, *args, **options) -> None:
        config = self._config(options)
        if options["if_empty"]:
            existing = Message.objects.count()
            if existing:
                self.stdout.write(f"no simulated traffic: the database already holds {existing} messages")
                return

        def progress(items, label):
            return tqdm(items, desc=label, unit="day", file=sys.stderr)

        if options["days_ago"] < 0:
            raise CommandError("--days-ago must be >= 0")
        today = timezone.now().date() - timedelta(days=options["days_ago"])
        try:
            report = simulate(config, progress=progress, today=today)
        except SimulationError as exc:
            raise CommandError(str(exc)) from exc
        result = {"config": {**config.__dict__, "drift_types": list(config.drift_types)}, **report.as_dict()}
        result["drift_effect"] = drift_effect(drift_day=report.drift_day, drift_types=config.drift_types)
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"{report.messages} messages ({report.drift_messages} drift claims) over {config.days} days "
            f"{report.first_day}..{report.last_day}, drift from {report.drift_day}; "
            f"model {report.model_version}"
        )
        self.stdout.write(
            f"flagged {report.flagged}, rule hits {report.rule_hits}, QA samples {report.qa_samples} "
            f"(rate {report.qa_rate}), explained {report.explained}, shadow-scored {report.shadow_scored}, "
            f"decided {report.decided}, "
            f"left in the queue {report.left_in_queue}"
        )
        self.stdout.write("seconds: " + ", ".join(f"{k} {v}" for k, v in report.seconds.items()))
        for code, effect in result["drift_effect"]["per_claim_type"].items():
            before, after = effect["before"], effect["after"]

            def fmt(part):
                return (
                    "n/a"
                    if part["rate"] is None
                    else f"{100 * part['rate']:.0f} % ({part['disagreements']} of {part['n']})"
                )

            marker = " (drifted)" if effect["drifted"] else ""
            self.stdout.write(f"disagreement {code}{marker}: before {fmt(before)}, after {fmt(after)}")
        for period, alerts in result["drift_effect"]["alerts"].items():
            listed = ", ".join(f"{a['claim_type']} {a['start']}" for a in alerts) or "none"
            self.stdout.write(f"alerts by {period}: {listed}")
