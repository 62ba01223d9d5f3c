"""Celery tasks of the monitoring app (default queue): thin wrappers around one service."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=5,
    max_retries=3,
)
def refresh_rollups() -> dict[str, int]:
    """Periodic (celery beat): fold new decisions and changed days into the roll-ups. Running it
    twice is harmless: the second run finds nothing new."""
    from monitoring.services import rollup_refresh

    result = rollup_refresh()
    return {"days": result.days, "rows": result.rows, "decisions": result.decisions}


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=5,
    max_retries=3,
)
def run_rule_backtest(backtest_id: int) -> str:
    """Compute a requested rule-set backtest (default queue). Idempotent: a finished backtest is
    left as it is, a re-delivered running one is computed again from the start."""
    from monitoring.backtest import rule_backtest_run

    return rule_backtest_run(backtest_id=backtest_id).status


@shared_task(
    ignore_result=True, autoretry_for=(OperationalError, InterfaceError), retry_backoff=5, max_retries=3
)
def sweep_backtests() -> int:
    """Periodic (celery beat): publish again the rule backtests whose task was lost."""
    from monitoring.backtest import rule_backtests_sweep

    return rule_backtests_sweep()
