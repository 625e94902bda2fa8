"""The tune's step plan under its time budget: every step that fits, fewer when the budget is short, and a
stall early on (the machine busy, the process paused) does not keep the plan short once the speed recovers."""

from __future__ import annotations

from server.tune.train import TuneSettings, steps_that_fit


def test_every_step_runs_when_the_budget_holds_them() -> None:
    s = TuneSettings(steps=300, max_seconds=600)
    assert steps_that_fit(4, 14.0, 10.0, s) == 300  # 1 s a step: 590 more would fit


def test_a_short_budget_plans_fewer_steps() -> None:
    s = TuneSettings(steps=300, max_seconds=100)
    assert steps_that_fit(4, 14.0, 10.0, s) == 5 + 86  # 1 s a step, 86 s left
    assert steps_that_fit(4, 200.0, 10.0, s) == 5  # already past the budget: at least the steps run so far


def test_a_stall_shortens_the_plan_only_while_it_weighs_on_the_speed() -> None:
    s = TuneSettings(steps=300, max_seconds=20_000)
    # a 600 s pause between the first steps: 150 s a step so far
    assert steps_that_fit(4, 610.0, 10.0, s) == 5 + int((20_000 - 610) / 150)
    # 16 steps later at 4 s each the mean is 33 s a step: all 300 fit again
    assert steps_that_fit(20, 674.0, 10.0, s) == 300
