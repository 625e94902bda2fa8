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
