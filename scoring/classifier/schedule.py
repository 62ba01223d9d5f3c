"""The learning-rate plan of a training run, pure: linear warm-up, then linear decay to zero at
the planned last step, and an end that can be brought forward mid-run.

Why: the run has a time budget (TrainConfig.max_minutes). On a machine slower than planned, a
run that is simply cut short stops with its learning rate still high and its model half-way down
the decay; such a cut cost 9 points of risk_free recall in CI. Instead the trainer measures its
step time early and after every epoch, and when the budget will not hold the planned steps it
shortens the plan (`steps_that_fit`): the decay then carries on from the current factor to zero
at the new end, so the shorter run still finishes annealed.
"""

from __future__ import annotations

import math


class AnnealingPlan:
    """Multiplier of the base learning rate at each optimizer step (for torch's LambdaLR),
    piecewise linear between (step, factor) points."""

    def __init__(self, *, warmup_steps: int, total_steps: int) -> None:
        if total_steps < 1:
            raise ValueError("total_steps must be >= 1")
        if not 0 <= warmup_steps < total_steps:
            raise ValueError("warmup_steps must be in [0, total_steps)")
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        start = [(0, 0.0)] if warmup_steps else []
        self._points = [*start, (warmup_steps, 1.0), (total_steps, 0.0)]

    def factor(self, step: int) -> float:
        if step >= self.total_steps:
            return 0.0
        for (x0, y0), (x1, y1) in zip(self._points, self._points[1:], strict=False):
            if x0 <= step < x1:
                return y0 + (y1 - y0) * (step - x0) / (x1 - x0)
        return 0.0

    def shorten(self, *, at_step: int, total_steps: int) -> bool:
        """End the plan at `total_steps` instead, continuing from the factor at `at_step` (no
        jump). Inside the warm-up, the warm-up keeps its share of the new plan. False if the new
        end is no shorter."""
        if total_steps >= self.total_steps:
            return False
        if total_steps <= at_step:
            raise ValueError(f"the new end {total_steps} must lie after the current step {at_step}")
        current = self.factor(at_step)
        kept = [(x, y) for x, y in self._points if x < at_step]
        ahead = [(at_step, current)]
        if at_step < self.warmup_steps:
            warmup = max(at_step, round(self.warmup_steps * total_steps / self.total_steps))
            if warmup > at_step:
                ahead.append((warmup, 1.0))
            self.warmup_steps = warmup
        self._points = [*kept, *ahead, (total_steps, 0.0)]
        self.total_steps = total_steps
        return True


def steps_that_fit(
    *,
    seconds_left: float,
    step_seconds: float,
    eval_seconds: float,
    steps_done: int,
    steps_per_epoch: int,
    max_steps: int,
    margin: float = 1.05,
) -> int:
    """The largest total number of optimizer steps (at least `steps_done`, at most `max_steps`)
    whose remaining steps, plus a validation pass at the end of every epoch they reach (the one
    in progress included), fit in `seconds_left`. Steps cost `step_seconds` times `margin`."""
    if step_seconds <= 0 or steps_per_epoch < 1:
        raise ValueError("step_seconds must be positive and steps_per_epoch >= 1")
    epochs_done = steps_done // steps_per_epoch
    best = steps_done
    for total in range(steps_done + 1, max_steps + 1):
        evals = math.ceil(total / steps_per_epoch) - epochs_done
        if (total - steps_done) * step_seconds * margin + evals * eval_seconds > seconds_left:
            break
        best = total
    return best
