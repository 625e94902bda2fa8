"""The new-question margin (conversations/follow_up.py `confident`): a message in a session starts over only
when it would route on its own with a score at least the margin above the threshold (the demo's case:
tests/integration/test_follow_up_margin.py)."""

from __future__ import annotations

import pytest

from server.api.outcome import DecisionReason
from server.conversations.follow_up import confident
from server.routing.candidates import Candidate
from server.routing.decision import Decision
from server.routing.router import RoutingOutcome
from server.templates import Template

THRESHOLD, MARGIN = 0.3, 0.25


def routed_at(score: float) -> RoutingOutcome:
    chosen = Candidate(
        "hr", Template(id="t", description="a template", body_key="sql", body="SELECT 1"), embedding_score=score
    )
    decision = Decision(chosen, DecisionReason.ROUTED, execute=True)
    return RoutingOutcome("q", [chosen], decision, ["hr"])


@pytest.mark.parametrize(
    ("score", "starts_over"),
    [(THRESHOLD + MARGIN, True), (THRESHOLD + MARGIN - 0.001, False), (THRESHOLD, False), (0.9, True)],
)
def test_only_a_score_the_margin_above_the_threshold_is_a_new_question(score, starts_over):
    assert confident(routed_at(score), THRESHOLD, MARGIN) is starts_over


def test_without_a_margin_any_executing_score_is_a_new_question():
    assert confident(routed_at(THRESHOLD), THRESHOLD, 0.0)
    assert not confident(routed_at(THRESHOLD - 0.001), THRESHOLD, 0.0)
