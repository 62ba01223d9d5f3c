"""Domain errors of the scoring app. Each carries a message fit to show a user."""

from __future__ import annotations


class ScoringError(Exception):
    """Base class for scoring domain errors."""


class InvalidTransition(ScoringError):
    """A message was asked to move to a status its current status does not allow."""


class ModelNotReady(ScoringError):
    """No active model version, or its artifact cannot be loaded."""


class DeviceOutOfMemory(ScoringError):
    """One window does not fit in the device's memory even alone. Never a verdict on the message:
    a worker with more free memory (or the same one later) can score it, so callers retry."""


class DeviceFailed(ScoringError):
    """The device failed under a batch (a CUDA error, a GPU fallen off the bus): no verdict on
    any of its messages. The worker stops taking model work and the batch goes back to the queue."""


class ScoringInputError(ScoringError):
    """A text the scorer refuses (empty, too long), with the reason. `index` is the position of
    the refused text in the batch given to the scorer (None when not known)."""

    def __init__(self, reason: str, *, index: int | None = None) -> None:
        self.reason = reason
        self.index = index
        super().__init__(reason if index is None else f"text {index}: {reason}")


class ArtifactError(ScoringError):
    """A model artifact is missing, incomplete or does not match its recorded sha256."""


class ModelVersionError(ScoringError):
    """A model version operation is not allowed (empty reason, duplicate name, bad threshold)."""


class TrainingDataError(ScoringError):
    """Training data (the corpus or an --extra file) is missing or has a malformed row."""


class RuleSetError(ScoringError):
    """A rule-set edit that cannot be published (bad rule, stale base, no permission)."""


class RetryError(ScoringError):
    """A failed message cannot be sent back to scoring as asked (not failed, no reason given)."""
