"""What became of a question: the one vocabulary of `metadata.status` and of the routing log."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    EXECUTED = "executed"  # /v1/query ran the chosen template
    ROUTED = "routed"  # test_routing: the decision would execute
    NO_MATCH = "no_match"  # nothing cleared the threshold
    AMBIGUOUS = "ambiguous"  # two templates too close; alternatives listed
    NEEDS_CLARIFICATION = "needs_clarification"  # a required parameter is missing or invalid
    ERROR = "error"  # the request ended in a 5xx or a timeout


class DecisionReason(StrEnum):
    """Why a routing decision came out as it did: `routing_decision.reason`, `composite_routing.reason` and,
    unless the answer says more (AnswerReason), `metadata.reason`. The decision rule (routing/decision.py)
    produces exactly these."""

    ROUTED_MULTISTAGE = "highest_combined_score_above_threshold"
    ROUTED = "highest_score_above_threshold"
    NO_MATCH = "no_matches_above_threshold"
    NO_CANDIDATES = "no_candidates"
    AMBIGUOUS = "ambiguous"


class AnswerReason(StrEnum):
    """`metadata.reason` where the answer is more than the routing decision."""

    FAN_OUT = "fan_out"  # the best template of each child clearing min_score ran
    NO_SOURCE_ABOVE_MIN_SCORE = "no_source_above_min_score"  # fan_out: no child's template cleared min_score
    CLARIFICATION_ANSWERED = "clarification_answered"  # the message completed the pending clarification
    ALTERNATIVE_CHOSEN = "alternative_chosen"  # the message picked one of the listed alternatives

    @classmethod
    def of_follow_up(cls, kind: str) -> AnswerReason:
        """The reason of a message that answered its session's pending turn: a clarification or a choice."""
        return cls.CLARIFICATION_ANSWERED if kind == "clarification" else cls.ALTERNATIVE_CHOSEN
