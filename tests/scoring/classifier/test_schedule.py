import pytest

from scoring.classifier.schedule import AnnealingPlan, epochs_that_fit


def test_warm_up_then_linear_decay_to_zero():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)

    assert plan.factor(0) == 0.0
    assert plan.factor(5) == pytest.approx(0.5)
    assert plan.factor(10) == pytest.approx(1.0)
    assert plan.factor(60) == pytest.approx(0.5)
    assert plan.factor(110) == 0.0
    assert plan.factor(500) == 0.0


def test_shortening_decays_from_the_current_factor_to_zero_at_the_new_end():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)
    before = plan.factor(60)  # 0.5

    assert plan.shorten(at_step=60, total_steps=80)

    assert plan.factor(60) == pytest.approx(before)  # no jump
    assert plan.factor(70) == pytest.approx(0.25)
    assert plan.factor(80) == 0.0


def test_shortening_during_warm_up_starts_the_decay_there():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)

    plan.shorten(at_step=4, total_steps=24)

    assert plan.factor(4) == pytest.approx(0.4)
    assert plan.factor(14) == pytest.approx(0.2)
    assert plan.factor(24) == 0.0


def test_a_longer_plan_is_not_a_shortening():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)

    assert not plan.shorten(at_step=50, total_steps=200)
    assert plan.total_steps == 110


def test_the_new_end_must_lie_ahead():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)

    with pytest.raises(ValueError, match="after the current step"):
        plan.shorten(at_step=50, total_steps=50)


@pytest.mark.parametrize(("warmup", "total"), [(-1, 10), (10, 10), (0, 0)])
def test_an_impossible_plan_is_refused(warmup, total):
    with pytest.raises(ValueError):
        AnnealingPlan(warmup_steps=warmup, total_steps=total)


@pytest.mark.parametrize(
    ("left", "epoch", "expected"), [(400, 100, 3), (430, 100, 4), (99, 100, 0), (0, 100, 0)]
)
def test_whole_epochs_that_fit_keep_a_margin(left, epoch, expected):
    assert epochs_that_fit(seconds_left=left, epoch_seconds=epoch) == expected
