"""The learning-rate plan of a training run, pure: linear warm-up, then linear decay to zero at
the planned last step.

The plan is fixed by the configuration (epochs x steps per epoch) before the first step and
never depends on how fast the machine is: the same commit and configuration train the same
model, a requirement for re-creating a model version. (An earlier design re-planned to fewer
epochs when a time budget would not hold them; that made the model depend on the machine's speed
that day, and is gone.)
"""

from __future__ import annotations


class AnnealingPlan:
    """Multiplier of the base learning rate at each optimizer step (for torch's LambdaLR)."""

    def __init__(self, *, warmup_steps: int, total_steps: int) -> None:
        if total_steps < 1:
            raise ValueError("total_steps must be >= 1")
        if not 0 <= warmup_steps < total_steps:
            raise ValueError("warmup_steps must be in [0, total_steps)")
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps

    def factor(self, step: int) -> float:
        if step < self.warmup_steps:
            return step / self.warmup_steps
        if step >= self.total_steps:
            return 0.0
        return (self.total_steps - step) / (self.total_steps - self.warmup_steps)
