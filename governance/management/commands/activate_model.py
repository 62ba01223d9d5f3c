"""Activate a model version (governed: a reason is required, the artifact is verified)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from governance.services.model_versions import model_version_activate
from scoring.errors import ScoringError
from scoring.models import ModelVersion


class Command(BaseCommand):
    help = "Make a model version the active one. Rolling back is activating an older version."

    def add_arguments(self, parser):
        parser.add_argument("version", help="Model version name.")
        parser.add_argument("--reason", required=True, help="Why (recorded with the activation).")
        parser.add_argument("--user", default=None, help="Username recorded as the activator.")

    def handle(self, *args, **options):
        try:
            version = ModelVersion.objects.get(name=options["version"])
        except ModelVersion.DoesNotExist as exc:
            raise CommandError(f"No model version named {options['version']!r}.") from exc
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"No user named {options['user']!r}.")
        try:
            activation = model_version_activate(version=version, user=user, reason=options["reason"])
        except ScoringError as exc:
            raise CommandError(str(exc)) from exc
        previous = activation.previous.name if activation.previous else "none"
        self.stdout.write(
            f"activated {version.name} (threshold {version.threshold:.4f}); previous: {previous}"
        )
