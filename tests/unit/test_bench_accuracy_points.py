"""scripts/bench_accuracy.py's operating points: two encoders compared at one in-scope accuracy.

Hand-made observations stand in for routed questions (the benchmark routes BANKING77 itself)."""

from __future__ import annotations

from server.routing.fitting import Observation
from server.testing.scripts import load_script

bench = load_script("bench_accuracy")
IN = ("child0", "a")


def right(score: float) -> Observation:
    return Observation(IN, IN, score)


def wrong(score: float) -> Observation:
    return Observation(IN, ("child0", "b"), score)


def out(score: float) -> Observation:
    return Observation(None, IN, score)


def test_rejection_at_in_scope_takes_the_highest_threshold_keeping_the_target() -> None:
    """4 in scope (3 right), 4 out of scope: keeping 3/4 in scope allows a threshold up to 0.6, which
    rejects the out-of-scope questions scored 0.2, 0.3 and 0.5 but not 0.9."""
    obs = [right(0.6), right(0.7), right(0.8), wrong(0.4), out(0.2), out(0.3), out(0.5), out(0.9)]
    point = bench.rejection_at_in_scope(obs, 0.75)
    assert point["threshold"] == 0.6
    assert point["in_scope_accuracy"] == 0.75
    assert point["out_of_scope_rejection"] == 0.75
    assert bench.rejection_at_in_scope(obs, 0.5)["threshold"] == 0.7  # one right answer may go
    assert bench.rejection_at_in_scope(obs, 1.0)["out_of_scope_rejection"] == 0.0  # unreachable: nothing rejected


def test_a_rounded_target_still_admits_the_point_it_was_read_from() -> None:
    """Targets come rounded to 4 places (2/3 -> 0.6667, above the true value): the same point still counts."""
    obs = [right(0.5), right(0.6), wrong(0.7), out(0.55)]
    assert bench.rejection_at_in_scope(obs, 0.6667)["threshold"] == 0.5


def test_compare_reads_both_encoders_at_the_stock_in_scope_accuracy() -> None:
    """The tuned encoder separates the out-of-scope questions better: at the stock encoder's fitted
    in-scope accuracy it rejects more, and the comparison says so."""
    stock_half = [right(0.6), right(0.7), right(0.5), out(0.65), out(0.4)]
    tuned_half = [right(0.8), right(0.9), right(0.7), out(0.3), out(0.4)]
    stock = ([{"acceptance": None}] * 10, stock_half + stock_half)
    tuned = ([{"acceptance": None}] * 10, tuned_half + tuned_half)
    result = bench.compare_encoders(stock, tuned, 5)
    combined = result["combined"]
    target = combined["stock"]["fitted"]["in_scope_accuracy"]
    assert combined["tuned"]["at_stock_in_scope"]["target_in_scope_accuracy"] == target
    assert combined["tuned"]["at_stock_in_scope"]["in_scope_accuracy"] >= target
    assert combined["tuned"]["at_stock_in_scope"]["out_of_scope_rejection"] == 1.0
    assert combined["stock"]["at_stock_in_scope"]["out_of_scope_rejection"] < 1.0
    assert combined["tuned_rejects_more_at_equal_in_scope"] is True
    assert "acceptance" not in result  # no acceptance probabilities: no acceptance comparison
