"""What the request pipeline tells the routing log, the metrics and the cluster about each question.

One typed interface instead of bare callables: `service.ask` calls `answered` on every observer once a
question has its answer (or its routing explanation), for the JSON API and MCP alike.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum

from ..routing.routable import Routable
from .answer import Answer, Explanation


class Asked(StrEnum):
    """Which front-door operation produced the answer (the routing log's and metrics' `kind`)."""

    QUERY = "query"
    TEST_ROUTING = "test_routing"


@dataclass(frozen=True)
class Answered:
    kind: Asked
    adapter: Routable  # the adapter the question was asked of
    question: str  # as checked (whitespace collapsed), not normalised
    result: Answer | Explanation


class AnswerObserver(ABC):
    """Learns of every answered question; must be quick and never raise (it runs on the answer path)."""

    @abstractmethod
    def answered(self, event: Answered) -> None: ...
