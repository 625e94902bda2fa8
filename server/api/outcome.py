"""What became of a question: the one vocabulary of `metadata.status` and of the routing log."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """In the order statistics list them (`routing_log.outcomes`), which the dashboard follows."""

    EXECUTED = "executed"  # /v1/query ran the chosen template
    ROUTED = "routed"  # test_routing: the decision would execute
    NEEDS_CLARIFICATION = "needs_clarification"  # a required parameter is missing or invalid
    AMBIGUOUS = "ambiguous"  # two templates too close; alternatives listed
    NO_MATCH = "no_match"  # nothing cleared the threshold
    ERROR = "error"  # the request ended in a 5xx or a timeout


class SourceStatus(StrEnum):
    """How one source of a fan-out answer did (`sections[].status`, `source_stats[].status`, and the routing
    log's `fan_out_sources`): a status per source, beside the answer's own Outcome."""

    OK = "ok"  # it answered with rows
    TIMEOUT = "timeout"  # no answer within its query_timeout
    ERROR = "error"  # it failed (down, refused the query, an internal error)
    NEEDS_CLARIFICATION = "needs_clarification"  # its template lacks a required value


class DecisionReason(StrEnum):
    """Why a routing decision came out as it did: `routing_decision.reason`, `composite_routing.reason` and,
    unless the answer says more (AnswerReason), `metadata.reason`. The decision rule produces exactly these."""

    # (the rule: routing/decision.py; a docstring here is the OpenAPI description, which names no source files)

    ROUTED_MULTISTAGE = "highest_combined_score_above_threshold"
    ROUTED = "highest_score_above_threshold"
    NO_MATCH = "no_matches_above_threshold"
    NO_CANDIDATES = "no_candidates"
    AMBIGUOUS = "ambiguous"
    WRITE_REQUEST = "asks_to_change_data"  # a change asked for that no candidate makes (routing/write_requests.py)


class AnswerReason(StrEnum):
    """`metadata.reason` where the answer is more than the routing decision: what it did beyond it, or how a
    message of a conversation was read."""

    # the follow-ups' reasons are the values of conversations/follow_up.py's REASONS (tests/unit/test_reasons.py
    # keeps the two together)

    FAN_OUT = "fan_out"  # the best template of each child clearing min_score ran
    NO_SOURCE_ABOVE_MIN_SCORE = "no_source_above_min_score"  # fan_out: no child's template cleared min_score
    CLARIFICATION_ANSWERED = "clarification_answered"  # the message completed the pending clarification
    ALTERNATIVE_CHOSEN = "alternative_chosen"  # the message picked one of the listed alternatives
    FOLLOW_UP = "follow_up"  # the message changed a value of the last answer, which ran again
    CORRECTION = "correction"  # the message corrected a value of the last answer
    PENDING_TEMPLATE_GONE = "pending_template_gone"  # the pending question's template no longer exists
