"""Composite adapter: routes one question across its children's template stores, then hands the
winning template to the child that owns it (route once: the child never re-matches)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import Field, field_validator

from ..routing.policy import RoutingPolicy
from ..routing.router import Router
from ..routing.settings import CompositeRetrievalSettings
from ..routing.stages.factory import build_stages
from ..routing.stages.intent_model import IntentModelStage
from .base import Adapter, AdapterSettings


class CompositeAdapterSettings(AdapterSettings):
    child_adapters: list[str] = Field(min_length=1)
    confidence_threshold: float = Field(0.4, ge=0.0, le=1.0)
    max_templates_per_source: int = Field(3, ge=1, le=100)
    parallel_search: bool = True
    search_timeout: float = Field(5.0, gt=0)
    verbose: bool = False
    ambiguity_margin: float | None = Field(None, ge=0.0, le=1.0)
    on_ambiguity: Literal["ask", "best"] = "ask"
    # per-composite overrides of the global composite_retrieval block (deep-merged, then validated)
    reranking: dict[str, Any] | None = None
    string_similarity: dict[str, Any] | None = None
    intent_model: dict[str, Any] | None = None
    acceptance: dict[str, Any] | None = None
    scoring: dict[str, Any] | None = None
    performance: dict[str, Any] | None = None

    @field_validator("child_adapters")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"child adapters listed twice: {dupes}")
        return value

    def overrides(self) -> dict[str, Any]:
        return {
            k: v
            for k in ("reranking", "string_similarity", "intent_model", "acceptance", "scoring", "performance")
            if (v := getattr(self, k)) is not None
        }


class CompositeAdapter(Adapter):
    type_name = "composite"
    settings_model = CompositeAdapterSettings
    body_key = None

    settings: CompositeAdapterSettings

    def __init__(self, settings, context) -> None:
        super().__init__(settings, context)
        base: CompositeRetrievalSettings = context.extra.get("retrieval") or CompositeRetrievalSettings()
        self.retrieval = base.merged(settings.overrides())
        app = context.extra.get("app")
        self._stages = build_stages(self.retrieval, app.rerankers if app is not None else {})
        self._router = Router(self.routing_policy(), self._stages)

    def routing_sources(self) -> list[Adapter]:
        """Children as they are now: after a reload the composite sees the new child objects."""
        assert self.context.lookup is not None
        return [self.context.lookup(name) for name in self.settings.child_adapters]

    def routing_policy(self) -> RoutingPolicy:
        s = self.settings
        return RoutingPolicy(
            confidence_threshold=s.confidence_threshold,
            max_templates_per_source=s.max_templates_per_source,
            parallel_search=s.parallel_search,
            search_timeout=s.search_timeout,
            ambiguity_margin=s.ambiguity_margin,
            on_ambiguity=s.on_ambiguity,
            verbose=s.verbose,
            retrieval=self.retrieval,
        )

    def router(self) -> Router:
        return self._router

    async def start(self) -> None:
        """Fit the intent model (if enabled) on the children as they are now, off the event loop."""
        for stage in self._stages:
            if isinstance(stage, IntentModelStage):
                await asyncio.to_thread(stage.fit, self.routing_sources())

    async def close_source(self) -> None:
        for stage in self._stages:
            await stage.close()

    async def health(self) -> dict[str, Any]:
        return {"status": "ok", "children": list(self.settings.child_adapters)}

    def describe(self) -> dict[str, Any]:
        children = {}
        for child in self.routing_sources():
            info = child.describe()
            children[child.name] = {
                "total_templates": info.get("total_templates", 0),
                "collection_name": info.get("collection_name"),
            }
        r = self.retrieval
        s = self.settings
        stage = next((st for st in self._stages if isinstance(st, IntentModelStage)), None)
        fitted = stage.model if stage is not None else None
        acceptance = stage.acceptance if stage is not None else None
        return {
            "type": self.type_name,
            "child_adapter_count": len(children),
            "child_adapters": children,
            "configuration": {
                "confidence_threshold": s.confidence_threshold,
                "max_templates_per_source": s.max_templates_per_source,
                "parallel_search": s.parallel_search,
                "search_timeout": s.search_timeout,
                "ambiguity_margin": s.ambiguity_margin,
                "on_ambiguity": s.on_ambiguity,
            },
            "multistage_selection": {
                "enabled": r.reranking.enabled or r.string_similarity.enabled or r.intent_model.enabled,
                "reranking": {
                    "enabled": r.reranking.enabled,
                    "provider": r.reranking.provider,
                    "top_candidates": r.reranking.top_candidates,
                    "weight": r.reranking.weight,
                },
                "intent_model": {
                    "enabled": r.intent_model.enabled,
                    "weight": r.intent_model.weight,
                    "fitted": fitted is not None,
                    "token_views": fitted is not None and fitted.views is not None,
                },
                "acceptance": {
                    "enabled": r.acceptance.enabled,
                    **(acceptance.to_json() if acceptance is not None else {"fitted": False}),
                },
                "string_similarity": {
                    "enabled": r.string_similarity.enabled,
                    "algorithm": r.string_similarity.algorithm,
                    "weight": r.string_similarity.weight,
                    "compare_fields": list(r.string_similarity.compare_fields),
                },
                "scoring": r.scoring.model_dump(),
            },
        }
