"""Domain errors of the reviews app. Each carries a message fit to show the user."""


class ReviewError(Exception):
    """Base class for review domain errors."""


class NotPermitted(ReviewError):
    """The user's role does not allow this action."""


class LockNotHeld(ReviewError):
    """A reviewer tried to decide (or release) a message they have not claimed."""


class LockHeldByOther(ReviewError):
    """The message is claimed by another reviewer whose lock is still live."""


class AlreadyDecided(ReviewError):
    """The message already has a decision; only a correction (supersede) can follow it."""


class DecisionInvalid(ReviewError):
    """The decision's content is incomplete or contradicts itself, or the message is not in a
    state that takes a decision."""


class AuditChainBroken(ReviewError):
    """The chain no longer agrees with its latest checkpoint (records removed or rewritten), so no
    new checkpoint may be signed over it."""
