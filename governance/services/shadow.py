"""Putting a version in shadow (or taking it out): a governance decision. The shadow scoring itself
is scoring's (scoring.services.shadow)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from scoring.errors import ModelVersionError
from scoring.models import ModelVersion


def model_version_set_shadow(*, version: ModelVersion, enabled: bool) -> ModelVersion:
    """Put a trained, inactive version in shadow (or take it out). The active version cannot be
    a shadow of itself; the artifact must be loadable (checked when the first task runs)."""
    with transaction.atomic():
        target = ModelVersion.objects.select_for_update().get(pk=version.pk)
        if enabled and target.is_active:
            raise ModelVersionError(
                f"{target.name} is the active version; only an inactive one can shadow it."
            )
        if enabled and not target.is_shadow:
            target.is_shadow, target.shadow_since = True, timezone.now()
        elif not enabled:
            target.is_shadow = False
        target.save(update_fields=["is_shadow", "shadow_since"])
    return target
