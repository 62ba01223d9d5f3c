"""Activating a model version and deriving a version with another threshold. A threshold is never
edited in place, and activation is the only way a version starts routing messages. (Registering
and training a version are scoring's: scoring.services.model_versions.)"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from scoring.classifier.artifacts import read_eval_rows, verify_artifact
from scoring.classifier.metrics import NOVEL, quality_bar, summarize
from scoring.errors import ModelVersionError
from scoring.models import ModelActivation, ModelVersion
from scoring.services.model_versions import THRESHOLD_RULE_MAX


def _metrics_snapshot(version: ModelVersion) -> dict:
    """The figures an activation records: threshold and the test metrics at it."""
    metrics = version.metrics or {}
    snapshot = {"threshold": version.threshold, "threshold_rule": version.threshold_rule}
    for key in ("test_in_distribution", "test_novel_phrasing", "test", "quality_bar"):
        if key in metrics:
            snapshot[key] = metrics[key]
    return snapshot


def model_version_activate(*, version: ModelVersion, user=None, reason: str) -> ModelActivation:
    """Make `version` the one active version, atomically.

    Promises: a non-empty reason is required; the artifact must exist and match its recorded
    sha256 (else ArtifactError and nothing changes); the previously active version is
    deactivated and recorded as `previous`; who, when, why and the metrics at that moment are
    recorded. A shadow version stops being shadow when activated. Rolling back is simply
    activating an older version. After commit a re-check of the explanation canary set with the
    new version is queued (explanations: CanaryCheck), unless CANARY_ON_ACTIVATION is off."""
    reason = (reason or "").strip()
    if not reason:
        raise ModelVersionError("Activating a model version needs a reason.")
    verify_artifact(version.artifact_path, version.artifact_sha256)
    try:
        with transaction.atomic():
            current = list(ModelVersion.objects.select_for_update().filter(is_active=True))
            target = ModelVersion.objects.select_for_update().get(pk=version.pk)
            if target.is_active:
                raise ModelVersionError(f"Model version {target.name} is already the active one.")
            previous = current[0] if current else None
            ModelVersion.objects.filter(is_active=True).update(is_active=False)
            now = timezone.now()
            ModelVersion.objects.filter(pk=target.pk).update(
                is_active=True, is_shadow=False, activated_at=now
            )
            activation = ModelActivation.objects.create(
                model_version=target,
                previous=previous,
                activated_by=user if user is not None and user.is_authenticated else None,
                reason=reason,
                metrics=_metrics_snapshot(target),
            )
            # After commit: queue the re-check of the explanation canaries with the new version
            # (recorded as a CanaryCheck; it never undoes or delays the activation).
            transaction.on_commit(lambda: _queue_canary_check(activation_id=activation.pk))
    except IntegrityError as exc:
        raise ModelVersionError("Another activation happened at the same moment; try again.") from exc
    version.refresh_from_db()
    return activation


def _queue_canary_check(*, activation_id: int) -> None:
    from explanations.services import canary_check_enqueue

    canary_check_enqueue(activation_id=activation_id)


def _variant_name(version: ModelVersion, threshold: float) -> str:
    base = f"{version.name}-t{threshold:.4f}".replace(".", "p")[:90]
    name, n = base, 1
    while ModelVersion.objects.filter(name=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def _metrics_at(version: ModelVersion, threshold: float) -> dict:
    """Recompute val/test metrics at another threshold from the artifact's stored scores."""
    rows = read_eval_rows(version.artifact_path)
    if not rows:
        return {"threshold": threshold, "note": "the artifact stores no evaluation scores"}
    test = [r for r in rows if r["split"] == "test"]
    in_distribution = [r for r in test if NOVEL not in r["slices"]]
    novel = [r for r in test if NOVEL in r["slices"]]
    summary = summarize(in_distribution, threshold)
    metrics = dict(version.metrics or {})
    # the parent's threshold was read on these; a variant's is set by hand
    for key in ("threshold_sets", "val_rule_threshold"):
        metrics.pop(key, None)
    metrics.update(
        {
            "threshold": threshold,
            "val": summarize([r for r in rows if r["split"] == "val"], threshold),
            "test": summarize(test, threshold),
            "test_in_distribution": summary,
            "test_novel_phrasing": summarize(novel, threshold) if novel else None,
            "quality_bar": quality_bar(summary),
            "test_errors": [],  # listed for the parent's threshold only
        }
    )
    return metrics


def model_version_with_threshold(*, version: ModelVersion, threshold: float, reason: str) -> ModelVersion:
    """A new, inactive version that shares `version`'s artifact with another threshold.

    Promises: thresholds are never edited in place; the new version points at `version` as
    its parent, records the reason in its threshold rule, and carries metrics recomputed at the
    new threshold from the artifact's stored val/test scores. Refuses an empty reason, a
    threshold outside [0, 1] or equal to the current one, and a missing or corrupt artifact."""
    reason = (reason or "").strip()
    if not reason:
        raise ModelVersionError("A new threshold needs a reason.")
    try:
        threshold = float(threshold)
    except (TypeError, ValueError) as exc:
        raise ModelVersionError(f"Threshold {threshold!r} is not a number.") from exc
    if not 0.0 <= threshold <= 1.0:
        raise ModelVersionError(f"Threshold {threshold} must be within [0, 1].")
    if threshold == version.threshold:
        raise ModelVersionError(f"Model version {version.name} already uses threshold {threshold}.")
    verify_artifact(version.artifact_path, version.artifact_sha256)
    rule = f"set by hand from {version.name} (was {version.threshold:.4f}): {reason}"
    with transaction.atomic():
        return ModelVersion.objects.create(
            name=_variant_name(version, threshold),
            base_model=version.base_model,
            artifact_path=version.artifact_path,
            artifact_sha256=version.artifact_sha256,
            corpus_sha256=version.corpus_sha256,
            labels=version.labels,
            hyperparameters=version.hyperparameters,
            threshold=threshold,
            threshold_rule=rule[:THRESHOLD_RULE_MAX],
            metrics={
                **_metrics_at(version, threshold),
                "threshold_change": {
                    "from_version": version.name,
                    "from": version.threshold,
                    "reason": reason,
                },
            },
            extra_data=version.extra_data,
            parent=version,
        )
