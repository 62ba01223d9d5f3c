"""Domain errors of the scoring app. Each carries a message fit to show a user."""


class ScoringError(Exception):
    """Base class for scoring domain errors."""


class InvalidTransition(ScoringError):
    """A message was asked to move to a status its current status does not allow."""


class ModelNotReady(ScoringError):
    """No active model version, or its artifact cannot be loaded."""


class ScoringInputError(ScoringError):
    """A text the scorer refuses (empty, too long), with the reason."""


class RuleSetError(ScoringError):
    """A rule-set edit that cannot be published (bad rule, stale base, no permission)."""
