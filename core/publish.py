"""Publishing a Celery task without letting a broker outage fail the caller.

Every place that hands work to the broker does it the same way: publish once (no retry: a web
request or a worker must not hang on a broker that is down), and when that fails, log it and
leave the work where a sweeper or a person finds it again. `publish` is that pattern; it takes
the task object, so it imports no project app."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

logger = logging.getLogger(__name__)


def publish(
    task,
    *,
    args: Sequence | None = None,
    kwargs: Mapping | None = None,
    queue: str | None = None,
    countdown: float | None = None,
    what: str,
    raise_errors: bool = False,
) -> bool:
    """Publish `task` (task.apply_async, retry=False) and return True; when the broker refuses
    (kombu and redis raise several types, all mean "not published") log a warning naming `what`
    was not published and return False, or re-raise when `raise_errors` is set (a caller whose
    transaction must roll back on a failed publish)."""
    options: dict[str, object] = {"retry": False}
    if args is not None:
        options["args"] = list(args)
    if kwargs is not None:
        options["kwargs"] = dict(kwargs)
    if queue is not None:
        options["queue"] = queue
    if countdown is not None:
        options["countdown"] = countdown
    try:
        task.apply_async(**options)
    except Exception as exc:
        if raise_errors:
            raise
        logger.warning("broker unavailable, %s: %s", what, exc)
        return False
    return True
