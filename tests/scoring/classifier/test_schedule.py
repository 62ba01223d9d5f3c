import pytest

from scoring.classifier.schedule import AnnealingPlan, steps_that_fit


def test_warm_up_then_linear_decay_to_zero():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)

    assert plan.factor(0) == 0.0
    assert plan.factor(5) == pytest.approx(0.5)
    assert plan.factor(10) == pytest.approx(1.0)
    assert plan.factor(60) == pytest.approx(0.5)
    assert plan.factor(110) == 0.0
    assert plan.factor(500) == 0.0


def test_without_warm_up_the_plan_starts_at_full_rate():
    plan = AnnealingPlan(warmup_steps=0, total_steps=4)

    assert [plan.factor(s) for s in range(5)] == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])


def test_shortening_decays_from_the_current_factor_to_zero_at_the_new_end():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)
    before = plan.factor(60)  # 0.5

    assert plan.shorten(at_step=60, total_steps=80)

    assert plan.factor(30) == pytest.approx(0.8)  # the past is unchanged
    assert plan.factor(60) == pytest.approx(before)  # no jump
    assert plan.factor(70) == pytest.approx(0.25)
    assert plan.factor(80) == 0.0


def test_shortening_during_warm_up_keeps_the_warm_up_share_of_the_new_plan():
    plan = AnnealingPlan(warmup_steps=10, total_steps=100)

    plan.shorten(at_step=2, total_steps=50)  # warm-up now ends at step 5

    assert plan.factor(2) == pytest.approx(0.2)
    assert plan.factor(5) == pytest.approx(1.0)
    assert plan.factor(27.5) == pytest.approx(0.5)
    assert plan.factor(50) == 0.0


def test_a_shortening_past_the_scaled_warm_up_decays_from_where_it_is():
    plan = AnnealingPlan(warmup_steps=10, total_steps=100)

    plan.shorten(at_step=8, total_steps=28)  # the scaled warm-up (3 steps) is already behind

    assert plan.factor(8) == pytest.approx(0.8)
    assert plan.factor(18) == pytest.approx(0.4)
    assert plan.factor(28) == 0.0


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


def fit(seconds_left, steps_done=0, **kwargs):
    values = {
        "step_seconds": 1.0,
        "eval_seconds": 10.0,
        "steps_per_epoch": 100,
        "max_steps": 400,
        "margin": 1.0,
    }
    values.update(kwargs)
    return steps_that_fit(seconds_left=seconds_left, steps_done=steps_done, **values)


def test_everything_fits_in_a_generous_budget():
    assert fit(10_000) == 400


def test_each_epoch_reached_pays_its_validation_pass():
    # two whole epochs cost 2 * (100 + 10) = 220 s; 30 s more buy 20 steps of a third + its pass
    assert fit(220) == 200
    assert fit(250) == 220


def test_the_epoch_in_progress_pays_its_pending_validation():
    # 50 steps done: finishing epoch 1 costs 50 + 10
    assert fit(60, steps_done=50) == 100
    assert fit(59, steps_done=50) == 99


def test_nothing_more_fits_when_the_time_is_gone():
    assert fit(5, steps_done=100) == 100


def test_the_margin_makes_steps_dearer():
    assert fit(260, step_seconds=2.0, margin=1.25) == 100  # 100 * 2.5 + 10 = 260
    assert fit(259.9, step_seconds=2.0, margin=1.25) < 100
