"""Domain errors of the explanations app. Each carries a message fit to show a user."""

from __future__ import annotations


class ExplanationsError(Exception):
    """Base class: an explanation report or check that cannot be made, with the reason."""


class ReportError(ExplanationsError):
    """A faithfulness report or canary check cannot run (no corpus, nothing flagged, bad input)."""
