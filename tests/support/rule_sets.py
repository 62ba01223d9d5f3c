"""Publishing a rule-set edit in tests the only way the product allows: a draft, a backtest of it
against the active version (the real computation, over whatever messages the test stored), then
the publish on that backtest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scoring.models import RuleSet
from scoring.services.rule_sets import RuleDraft, rule_set_draft_create, rule_set_draft_publish


def publish_edit(
    *,
    base: RuleSet,
    user,
    note: str,
    add: Sequence[RuleDraft] = (),
    change: Mapping[str, Mapping[str, Any]] | None = None,
    remove: Iterable[str] = (),
) -> RuleSet:
    """Draft the edit of `base`, backtest it over the last day, publish it; the new version."""
    from monitoring.backtest import rule_backtest_now

    draft = rule_set_draft_create(base=base, user=user, note=note, add=add, change=change, remove=remove)
    backtest = rule_backtest_now(draft=draft, days=1)
    return rule_set_draft_publish(draft=draft, backtest=backtest, user=user)
