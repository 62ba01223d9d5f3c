"""Model versions: registering a trained artifact and training one. Activating a version and
deriving one with another threshold are governance's (governance.services.model_versions)."""

from __future__ import annotations

import re
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from scoring.classifier.artifacts import (
    artifact_sha256,
    read_manifest,
    read_metrics,
)
from scoring.constants import CLASS_LABELS
from scoring.errors import ArtifactError, ModelVersionError
from scoring.models import ModelVersion

_NAME = re.compile(r"^[-a-zA-Z0-9_]+$")
THRESHOLD_RULE_MAX = 300


def model_version_register(*, artifact_dir: str | Path) -> ModelVersion:
    """Record a trained artifact as an inactive ModelVersion named after its folder.

    Promises: the artifact is complete and its sha256 is computed now and stored; labels,
    threshold, rule, hyper-parameters, base model, corpus sha256, extra data and metrics come
    from the artifact's own files. Raises ArtifactError for a missing/incomplete artifact and
    ModelVersionError for a name already taken or labels that are not the product's classes."""
    path = Path(artifact_dir).resolve()
    sha = artifact_sha256(path)
    manifest = read_manifest(path)
    name = manifest.get("version") or path.name
    if not _NAME.match(name):
        raise ModelVersionError(f"{name!r} is not a valid version name (letters, digits, - and _ only).")
    labels = manifest.get("labels")
    if labels != list(CLASS_LABELS):
        raise ModelVersionError(f"The artifact's labels {labels} are not {list(CLASS_LABELS)}.")
    threshold = manifest.get("threshold")
    if not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
        raise ArtifactError(f"The artifact's threshold {threshold!r} is not a number in [0, 1].")
    with transaction.atomic():
        if ModelVersion.objects.filter(name=name).exists():
            raise ModelVersionError(f"A model version named {name!r} already exists.")
        return ModelVersion.objects.create(
            name=name,
            base_model=str(manifest.get("base_model", ""))[:300],
            artifact_path=str(path),
            artifact_sha256=sha,
            corpus_sha256=manifest.get("corpus_sha256", ""),
            labels=labels,
            hyperparameters=manifest.get("hyperparameters", {}),
            threshold=float(threshold),
            threshold_rule=str(manifest.get("threshold_rule", ""))[:THRESHOLD_RULE_MAX],
            metrics=read_metrics(path),
            extra_data=manifest.get("extra_data", []),
        )


def model_version_train(*, config, name: str, models_dir: str | Path, progress: bool = True) -> ModelVersion:
    """Train a classifier (scoring.classifier.training.TrainConfig), save its artifact under
    models_dir/<name>/ and register it. The new version is NOT activated. Refuses a name that is
    taken before spending any time on training."""
    from scoring.classifier.training import train_and_save  # torch/transformers: only when training

    if not _NAME.match(name):
        raise ModelVersionError(f"{name!r} is not a valid version name (letters, digits, - and _ only).")
    if ModelVersion.objects.filter(name=name).exists() or (Path(models_dir) / name).exists():
        raise ModelVersionError(f"A model version named {name!r} already exists.")
    from scoring.selectors import active_compiled_rules

    # The evaluation sets are measured as the pipeline routes them: model flag or active rule hit.
    path = train_and_save(
        config, models_dir=models_dir, version=name, progress=progress, rules=active_compiled_rules()
    )
    return model_version_register(artifact_dir=path)


def default_version_name() -> str:
    """claims-YYYYmmdd-HHMMSS (UTC)."""
    return timezone.now().strftime("claims-%Y%m%d-%H%M%S")


def train_config_from_settings(**overrides):
    """The TrainConfig that `train_classifier` without options and `make run` use: the base
    model, corpus and its hand-written training rows, windows, threshold rule and the sets it
    reads, evaluation sets and device from settings, the rest from TrainConfig's defaults;
    `overrides` replace any field (None means "keep the default")."""
    from django.conf import settings

    from scoring.classifier.training import TrainConfig

    values = {
        "base_model": settings.BASE_MODEL_PATH,
        "corpus_path": str(settings.CORPUS_PATH),
        "extra_paths": tuple(str(path) for path in settings.TRAINING_EXTRA_FILES),
        "window_tokens": settings.WINDOW_TOKENS,
        "stride": settings.WINDOW_STRIDE,
        "target_recall": settings.THRESHOLD_TARGET_RECALL,
        "evaluation_sets": tuple(
            str(Path(settings.EVALUATION_SETS_DIR) / f"{name}.jsonl") for name in settings.EVALUATION_SETS
        ),
        "threshold_sets": tuple(
            str(Path(settings.EVALUATION_SETS_DIR) / f"{name}.jsonl") for name in settings.THRESHOLD_SETS
        ),
        "device": settings.SCORING_DEVICE,
        "token_budget": settings.TOKEN_BUDGET,
    }
    values.update({key: value for key, value in overrides.items() if value is not None})
    if overrides.get("type_floor") is None:  # the floor never asks more than the target
        values["type_floor"] = min(settings.THRESHOLD_TYPE_FLOOR, values["target_recall"])
    return TrainConfig(**values)
