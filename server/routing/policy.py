"""What a router needs to know about the adapter it routes for: thresholds, fan-out, stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .settings import CompositeRetrievalSettings


@dataclass(frozen=True)
class RoutingPolicy:
    confidence_threshold: float
    max_templates_per_source: int = 3
    parallel_search: bool = True
    search_timeout: float = 5.0
    ambiguity_margin: float | None = None
    on_ambiguity: Literal["ask", "best"] = "ask"
    verbose: bool = False
    follow_ups: bool = True  # in a session, a message may change a value of the last answer
    retrieval: CompositeRetrievalSettings = field(default_factory=CompositeRetrievalSettings.embedding_only)

    @property
    def multistage(self) -> bool:
        r = self.retrieval
        return r.reranking.enabled or r.string_similarity.enabled or r.intent_model.enabled
