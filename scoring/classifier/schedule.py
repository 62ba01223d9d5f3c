"""The learning-rate plan of a training run, pure: linear warm-up, then linear decay to zero at
the planned last step, and an end that can be brought forward mid-run.

Why: the run has a time budget (TrainConfig.max_minutes). On a machine slower than planned, a
run that is simply cut short stops with its learning rate still high and its model half-way down
the decay; such a cut cost 9 points of risk_free recall in a measured run. When the budget
will not hold the planned epochs, the trainer shortens the plan instead, and the decay carries
on from the current factor to zero at the new end, so the fewer epochs still finish annealed.
"""

from __future__ import annotations

import math


class AnnealingPlan:
    """Multiplier of the base learning rate at each optimizer step (for torch's LambdaLR)."""

    def __init__(self, *, warmup_steps: int, total_steps: int) -> None:
        if total_steps < 1:
            raise ValueError("total_steps must be >= 1")
        if not 0 <= warmup_steps < total_steps:
            raise ValueError("warmup_steps must be in [0, total_steps)")
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        # The decay runs in a straight line from this (step, factor) to (total_steps, 0).
        self._anchor = (warmup_steps, 1.0)

    def factor(self, step: int) -> float:
        if step < self.warmup_steps:
            return step / self.warmup_steps
        anchor_step, anchor_factor = self._anchor
        if step >= self.total_steps:
            return 0.0
        return anchor_factor * (self.total_steps - step) / (self.total_steps - anchor_step)

    def shorten(self, *, at_step: int, total_steps: int) -> bool:
        """End the plan at `total_steps` instead, decaying from here. False if that is no shorter."""
        if total_steps >= self.total_steps:
            return False
        if total_steps <= at_step:
            raise ValueError(f"the new end {total_steps} must lie after the current step {at_step}")
        current = self.factor(at_step)
        self.warmup_steps = min(self.warmup_steps, at_step)
        self._anchor = (at_step, current)
        self.total_steps = total_steps
        return True


def epochs_that_fit(*, seconds_left: float, epoch_seconds: float, margin: float = 1.05) -> int:
    """Whole epochs (each costing `epoch_seconds`, training and its validation pass, times a
    safety margin) that fit in `seconds_left`."""
    if epoch_seconds <= 0:
        raise ValueError("epoch_seconds must be positive")
    return max(0, math.floor(seconds_left / (epoch_seconds * margin)))
