"""Which questions a decision rule gets wrong, and why (fit-thresholds lists them), and the fitted threshold
written with few decimals without changing what it decides."""

from __future__ import annotations

from server.routing.decision import DecisionRule
from server.routing.fitting import (
    AMBIGUOUS,
    ANSWERED_OUT_OF_SCOPE,
    BELOW_THRESHOLD,
    WRONG_TEMPLATE,
    Observation,
    evaluate,
    fit_threshold,
    misses,
    tidy_threshold,
)

OBS = [
    Observation(("a", "t1"), ("a", "t1"), 0.40, 0.10),  # right
    Observation(("a", "t2"), ("a", "t2"), 0.80, 0.78),  # right template, runner-up within the margin
    Observation(("a", "t3"), ("a", "t9"), 0.60, 0.20),  # wrong template
    Observation(None, ("a", "t1"), 0.45, 0.10),  # out of scope, answered
    Observation(None, ("a", "t1"), 0.20, None),  # out of scope, turned away: right
    Observation(("a", "t4"), ("a", "t4"), 0.30, None),  # right template, under the threshold
    Observation(("a", "t5"), None, 0.0, None),  # no candidate at all
]


def test_misses_are_exactly_what_evaluate_counts_wrong_with_the_reason():
    rule = DecisionRule(0.35, 0.05, "ask")
    found = misses(OBS, rule)
    assert found == [
        (1, AMBIGUOUS),
        (2, WRONG_TEMPLATE),
        (3, ANSWERED_OUT_OF_SCOPE),
        (5, BELOW_THRESHOLD),
        (6, BELOW_THRESHOLD),
    ]
    assert len(found) == round((1 - evaluate(OBS, rule).accuracy) * len(OBS))
    assert (1, AMBIGUOUS) not in misses(OBS, DecisionRule(0.35, 0.05, "best"))  # "best" answers instead of asking


def test_the_tidy_threshold_decides_as_the_fit_does():
    scores = [0.1234567, 0.2345678, 0.161, 0.1610004]
    obs = [
        Observation(("a", "t"), ("a", "t"), scores[1]),
        Observation(None, ("a", "t"), scores[0]),
        Observation(None, ("a", "t"), scores[3]),  # the highest out-of-scope score
        Observation(("a", "u"), ("a", "u"), 0.9),
    ]
    fit = fit_threshold(obs)
    value = tidy_threshold(obs, fit)
    assert fit.threshold > scores[3]  # just above the highest out-of-scope score
    assert value == 0.162 and evaluate(obs, DecisionRule(value)).accuracy == fit.accuracy == 1.0
    # three decimals would cross a score here: more are kept
    close = [Observation(None, ("a", "t"), 0.16), Observation(("a", "t"), ("a", "t"), 0.1601)]
    tight = fit_threshold(close)
    assert tidy_threshold(close, tight) == 0.1601 and tight.accuracy == 1.0
