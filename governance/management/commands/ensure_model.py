"""Used by `make run`: make sure a model version is active, training one if there is none."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from governance.services.model_versions import model_version_activate
from scoring.classifier.artifacts import verify_artifact
from scoring.classifier.metrics import format_report
from scoring.errors import ArtifactError, ScoringError
from scoring.models import ModelVersion
from scoring.services.model_versions import (
    default_version_name,
    model_version_train,
    train_config_from_settings,
)

TRAINED_REASON = "initial model trained by make run"
EXISTING_REASON = "newest trained model version activated by make run (none was active)"


class Command(BaseCommand):
    help = (
        "When no model version is active: activate the newest trained one whose artifact is intact, "
        "or train one (with a progress bar) and activate it."
    )

    def handle(self, *args, **options):
        active = ModelVersion.objects.filter(is_active=True).first()
        if active:
            self.stdout.write(f"model version {active.name} is active")
            return
        try:
            for candidate in ModelVersion.objects.order_by("-created_at", "-id"):
                try:
                    verify_artifact(candidate.artifact_path, candidate.artifact_sha256)
                except ArtifactError as exc:
                    self.stderr.write(f"skipping {candidate.name}: {exc}")
                    continue
                model_version_activate(version=candidate, reason=EXISTING_REASON)
                self.stdout.write(f"activated {candidate.name}: {EXISTING_REASON}")
                return
            self.stdout.write("no model version yet: training one (this takes a few minutes on a CPU)")
            config = train_config_from_settings()
            version = model_version_train(
                config=config, name=default_version_name(), models_dir=settings.MODELS_DIR
            )
            model_version_activate(version=version, reason=TRAINED_REASON)
        except (ScoringError, ValueError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(format_report(version.metrics))
        self.stdout.write(f"activated {version.name}: {TRAINED_REASON}")
