"""Run the explanation canary check of a model version by hand (activation queues it itself)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from explanations.services import canary_check_run
from scoring.models import ModelActivation, ModelVersion


class Command(BaseCommand):
    help = (
        "Check the fixed canary set (corpus messages with known claims) with a model version and "
        "compare it with another one (default: the version its latest activation replaced): pass "
        "rates per method, rank correlation of the attributions, and canaries that passed before "
        "and fail now. Recorded as a CanaryCheck and shown on the faithfulness page."
    )

    def add_arguments(self, parser):
        parser.add_argument("--model", default=None, help="model version name (default: the active one)")
        parser.add_argument("--previous", default=None, help="version to compare with (name)")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")

    def _version(self, name: str) -> ModelVersion:
        version = ModelVersion.objects.filter(name=name).first()
        if version is None:
            raise CommandError(f"No model version named {name!r}.")
        return version

    def handle(self, *args, model, previous, as_json, **_):
        version = self._version(model) if model else ModelVersion.objects.filter(is_active=True).first()
        if version is None:
            raise CommandError("No model version is active; name one with --model.")
        if previous:
            before = self._version(previous)
        else:
            activation = (
                ModelActivation.objects.filter(model_version=version).order_by("-activated_at").first()
            )
            before = activation.previous if activation else None
        check = canary_check_run(version=version, previous=before, progress=True)
        summary = {
            "canary_check": check.pk,
            "model_version": version.name,
            "previous_version": before.name if before else None,
            "error": check.error,
            "pass_rates": check.pass_rates,
            "rank_correlation": check.rank_correlation,
            "parameters": check.parameters,
            "findings": check.findings,
        }
        if as_json:
            self.stdout.write(json.dumps(summary, sort_keys=True))
            return
        if check.error:
            raise CommandError(f"canary check {check.pk} could not run: {check.error}")
        for key, value in summary.items():
            if key != "findings":
                self.stdout.write(f"{key}: {value}")
        self.stdout.write(f"findings: {len(check.findings)}")
        for finding in check.findings:
            self.stdout.write(f"  {finding['id']} {finding['method']}: {finding['now']}")
