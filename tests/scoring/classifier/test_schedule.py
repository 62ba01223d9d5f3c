import pytest

from scoring.classifier.schedule import AnnealingPlan


def test_warm_up_then_linear_decay_to_zero():
    plan = AnnealingPlan(warmup_steps=10, total_steps=110)

    assert plan.factor(0) == 0.0
    assert plan.factor(5) == pytest.approx(0.5)
    assert plan.factor(10) == pytest.approx(1.0)
    assert plan.factor(60) == pytest.approx(0.5)
    assert plan.factor(110) == 0.0
    assert plan.factor(500) == 0.0


def test_no_warm_up_starts_at_the_full_rate():
    plan = AnnealingPlan(warmup_steps=0, total_steps=4)
    assert [plan.factor(s) for s in range(5)] == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])


@pytest.mark.parametrize(("warmup", "total"), [(0, 0), (5, 5), (-1, 10)])
def test_an_impossible_plan_is_refused(warmup, total):
    with pytest.raises(ValueError):
        AnnealingPlan(warmup_steps=warmup, total_steps=total)
