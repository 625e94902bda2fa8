"""Composite adapter: routes one question across its children's template stores, then hands the
winning template to the child that owns it (route once: the child never re-matches). It owns no data
source, so it lives with routing and is built with its own context (CompositeContext)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from ..adapters.base import Adapter, AdapterSettings
from ..api.health import Health
from ..api.requests import Execution
from ..bulkhead import REFIT_POOL, run_on
from ..intent.calibration import ScoreCalibration, fit_per_model
from ..intent.fitted_models import FittedModels
from ..rerankers.settings import RerankerSettings
from ..rerankers.shared_cache import SharedRerankCache
from ..stores.group_search import GroupSearch
from .batches import RoutingBatches
from .policy import RoutingPolicy
from .routable import Routable, RoutingSource
from .settings import (
    AcceptanceOverride,
    CompositeRetrievalSettings,
    IntentModelOverride,
    PerformanceOverride,
    RerankingOverride,
    RetrievalOverrides,
    ScoringOverride,
    StringSimilarityOverride,
)
from .stages.base import ScoringStage
from .stages.factory import build_stages
from .stages.intent_model import IntentModelStage, Superseded

log = logging.getLogger("intent_router.adapters.composite")


class CompositeAdapterSettings(AdapterSettings):
    child_adapters: list[str] = Field(
        min_length=1, description="the adapters it routes over; unknown or disabled names are load errors"
    )
    confidence_threshold: float = Field(0.4, ge=0.0, le=1.0, description="the combined score needed to route")
    max_templates_per_source: int = Field(3, ge=1, le=100, description="candidates taken from each child")
    parallel_search: bool = Field(
        True, description="search the children at once (false: one after another in config order)"
    )
    search_timeout: float = Field(
        5.0, gt=0, description="seconds per child; a slow or failing child is skipped and named"
    )
    verbose: bool = Field(False, description="log [Composite] lines for each decision")
    ambiguity_margin: float | None = Field(
        None, ge=0.0, le=1.0, description="top two templates closer than this give `ambiguous`; unset: never ambiguous"
    )
    on_ambiguity: Literal["ask", "best"] = Field(
        "ask", description="`ask`: execute nothing and list the alternatives; `best`: run the best"
    )
    # route_once: the best template overall runs; fan_out: the best template of each child that scores at
    # least min_score runs, at most max_sources of them, in parallel (service/fan_out.py)
    execution: Execution = Field(
        "route_once",
        description="`route_once`: the best template runs; `fan_out`: the best template of each child above min_score"
        " runs, in parallel",
    )
    max_sources: int = Field(
        3, ge=1, le=50, description="fan_out: at most this many children run (the best-scored first)"
    )
    min_score: float | None = Field(None, ge=0.0, le=1.0, description="default: confidence_threshold")
    # embedding scores of children with different models mapped to one 0..1 scale (intent/calibration.py):
    # auto = when the children use more than one embedding model; examples = always; off = raw cosines
    score_calibration: Literal["auto", "examples", "off"] = Field(
        "auto",
        description="map the embedding scores of children with different models to one 0..1 scale: `auto` when they "
        "use more than one model, `examples` always, `off` raw cosines",
    )
    # in a session, a message may change a value of the last answer ("what about Sales?", "no, I meant 2023");
    # false: only what an answer left pending (a clarification, a choice) is continued
    follow_ups: bool = Field(
        True,
        description="in a session, a message may change a value of the last answer (false: only a pending "
        "clarification or choice is continued)",
    )
    # per-composite overrides of the global composite_retrieval block (merged over it at load)
    reranking: RerankingOverride | None = Field(None, description="overrides of composite_retrieval.reranking")
    string_similarity: StringSimilarityOverride | None = Field(
        None, description="overrides of composite_retrieval.string_similarity"
    )
    intent_model: IntentModelOverride | None = Field(None, description="overrides of composite_retrieval.intent_model")
    acceptance: AcceptanceOverride | None = Field(None, description="overrides of composite_retrieval.acceptance")
    scoring: ScoringOverride | None = Field(None, description="overrides of composite_retrieval.scoring")
    performance: PerformanceOverride | None = Field(None, description="overrides of composite_retrieval.performance")

    @field_validator("child_adapters")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            raise ValueError(f"child adapters listed twice: {dupes}")
        return value

    @field_validator("score_calibration", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        """YAML reads a bare `off` as false."""
        return "off" if value is False else value

    def overrides(self) -> RetrievalOverrides:
        """The composite_retrieval blocks this composite set for itself (the same keys as RetrievalOverrides)."""
        return RetrievalOverrides(**{block: getattr(self, block) for block in RetrievalOverrides.model_fields})


@dataclass
class CompositeContext:
    """What the runtime hands a composite: `lookup` (the runtime's routables by name, so it always sees
    its current children), its effective retrieval settings (the global block merged with its own
    overrides), the named reranker connections and the runtime's cache of fitted intent models."""

    root: Path
    lookup: Callable[[str], Routable]
    retrieval: CompositeRetrievalSettings
    fitted_models: FittedModels
    rerankers: Mapping[str, RerankerSettings] = field(default_factory=dict)
    shared_rerank_cache: SharedRerankCache | None = None  # rerank scores in Redis (rerank_cache.backend redis)


class CompositeAdapter(Adapter, Routable):
    type_name = "composite"
    settings_model = CompositeAdapterSettings

    settings: CompositeAdapterSettings

    def __init__(self, settings: CompositeAdapterSettings, context: CompositeContext) -> None:
        super().__init__(settings)
        self.context = context
        self.retrieval = context.retrieval
        self._lookup = context.lookup
        self._stages = build_stages(
            self.retrieval,
            context.rerankers,
            context.fitted_models,
            context.root,
            composite=settings.name,
            shared_rerank_cache=context.shared_rerank_cache,
        )
        self._refits: list[asyncio.Task[None]] = []
        s = settings  # frozen, like the retrieval block: the policy is built once (asked twice a question)
        self._policy = RoutingPolicy(
            confidence_threshold=s.confidence_threshold,
            max_templates_per_source=s.max_templates_per_source,
            parallel_search=s.parallel_search,
            search_timeout=s.search_timeout,
            ambiguity_margin=s.ambiguity_margin,
            on_ambiguity=s.on_ambiguity,
            verbose=s.verbose,
            retrieval=self.retrieval,
            follow_ups=s.follow_ups,
        )
        self._closed = False
        self._calibrations: dict[str, ScoreCalibration] = {}
        self.calibration_status: dict[str, Any] = {"enabled": False}
        self._group_search = GroupSearch()
        self._batches = RoutingBatches()

    def routing_sources(self) -> list[RoutingSource]:
        """Children as they are now: after a reload the composite sees the new child objects."""
        children = [self._lookup(name) for name in self.settings.child_adapters]
        return [c for c in children if isinstance(c, RoutingSource)]  # the loader refuses nested composites

    def routing_policy(self) -> RoutingPolicy:
        return self._policy

    @property
    def fan_out_min_score(self) -> float:
        """The score a child's best template needs to run under fan_out (default: the routing threshold)."""
        s = self.settings
        return s.confidence_threshold if s.min_score is None else s.min_score

    def routing_stages(self) -> list[ScoringStage]:
        return self._stages

    def group_search(self) -> GroupSearch:
        return self._group_search

    def routing_batches(self) -> RoutingBatches:
        return self._batches

    def _warm_search(self, children: list[RoutingSource]) -> None:
        """The children's stacked views (one per embedding model), built before the first question."""
        by_model: dict[str, list[RoutingSource]] = {}
        for child in children:
            if child.searches_inline:
                by_model.setdefault(child.embedder.model_id, []).append(child)
        for model, group in by_model.items():
            self._group_search.warm(model, [c.store for c in group])

    def score_calibrations(self) -> Mapping[str, ScoreCalibration]:
        return self._calibrations

    def calibrates(self, children: list[RoutingSource]) -> bool:
        mode = self.settings.score_calibration
        models = {c.embedder.model_id for c in children}
        return mode == "examples" or (mode == "auto" and len(models) > 1)

    async def _fit_calibrations(self, children: list[RoutingSource]) -> None:
        """One map per embedding model, fitted on the children's own templates (off the event loop).
        A model that cannot be fitted keeps raw cosines, and says so in the status and the log."""
        if not self.calibrates(children):
            return
        fitted = await run_on(REFIT_POOL, fit_per_model, children)
        self._calibrations = {m: c for m, c in fitted.items() if c is not None}
        unfitted = sorted(m for m, c in fitted.items() if c is None)
        self.calibration_status = {
            "enabled": True,
            "models": [c.to_json() for c in self._calibrations.values()],
            "not_fitted": unfitted,
        }
        if unfitted:
            log.warning(
                "composite %s: embedding scores of %s are not calibrated (too few templates with two or more"
                " examples); they are compared raw with the other models'",
                self.name,
                ", ".join(unfitted),
            )

    async def start(self) -> None:
        """Get the intent model (if enabled) for the children as they are now, off the event loop.

        A fit found in the cache is used at once. Otherwise, when an earlier composite of the same name and
        settings had a model (a reload), that model serves while the new one is fitted in the background
        (on REFIT_POOL): new templates are routable by the other stages as soon as they are indexed, and
        the newest reload's fit wins over one still running. Only a first fit is waited for.

        The stacked view is built beside the rest (a thread of its own: its int8 session is built in
        onnxruntime, outside the GIL, while the intent model is read): the start returns once both are done."""
        children = self.routing_sources()
        view = asyncio.ensure_future(asyncio.to_thread(self._warm_search, children))
        try:
            await self._start_stages(children)
        finally:
            await view

    async def _start_stages(self, children: list[RoutingSource]) -> None:
        await self._fit_calibrations(children)
        fitted = self.context.fitted_models
        for stage in self._stages:
            if not isinstance(stage, IntentModelStage):
                continue
            stage.owner = self.name
            stage.search = self._group_search
            lineage = stage.lineage(children)
            generation = fitted.begin(lineage)  # a refit of an older reload still running stops
            previous = fitted.previous(lineage)
            # from the cache, or the previous fit with only the changed templates refitted (a fraction of a
            # second: the edited templates are scored by this stage at once)
            quick = await asyncio.to_thread(
                functools.partial(stage.compute, children, fit_allowed=False, previous=previous)
            )
            if quick is None and previous is None:
                try:
                    quick = await run_on(
                        REFIT_POOL, functools.partial(stage.compute, children, superseded=self._closing)
                    )
                except Superseded:  # closed while the first fit ran
                    return
            if quick is not None:
                stage.apply(quick)
                fitted.remember(lineage, quick)
                if quick.complete:
                    continue
            else:
                stage.apply(previous)
                stage.source = "previous"
            stage.fitting = True  # the full fit (or the token views the update left out) in the background
            self._refits.append(asyncio.ensure_future(self._refit(stage, children, lineage, generation)))

    def _closing(self) -> bool:
        return self._closed

    async def _refit(
        self, stage: IntentModelStage, children: list[RoutingSource], lineage: str, generation: int
    ) -> None:
        fitted = self.context.fitted_models

        def superseded() -> bool:
            return self._closed or not fitted.is_newest(lineage, generation)

        try:
            result = await run_on(REFIT_POOL, functools.partial(stage.compute, children, superseded=superseded))
        except Superseded:
            log.info("composite %s: intent-model refit stopped (superseded by a newer one, or closing)", self.name)
            return
        except Exception:
            log.exception("composite %s: intent-model refit failed; the previous model keeps serving", self.name)
            return
        finally:
            stage.fitting = False
        if result is not None and not superseded():
            stage.apply(result)
            fitted.remember(lineage, result)
            log.info("composite %s: intent model swapped in (generation %d)", self.name, stage.generation)

    async def refitted(self) -> None:
        """Wait for background refits (tests, tools)."""
        while pending := [t for t in self._refits if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def close(self) -> None:
        self._closed = True  # a refit still running stops at its next check
        for task in self._refits:
            task.cancel()
        for stage in self._stages:
            await stage.close()

    async def health(self) -> dict[str, Any]:
        return {"status": Health.OK, "children": list(self.settings.child_adapters)}

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
                "execution": s.execution,
                "max_sources": s.max_sources,
                "min_score": self.fan_out_min_score,
                "score_calibration": {"mode": s.score_calibration, **self.calibration_status},
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
                    "source": stage.source if stage is not None else None,
                    "fitting": stage is not None and stage.fitting,  # a refit runs; the previous model serves
                    "generation": stage.generation if stage is not None else 0,
                    # full fit, incremental update (templates_fitted: how many were refitted) or loaded
                    "last_fit": fitted.fit_info.to_json() if fitted is not None else None,
                    "ready_seconds": round(stage.fit_seconds, 3) if stage is not None and stage.fit_seconds else None,
                },
                "acceptance": {
                    "enabled": r.acceptance.enabled,
                    **(acceptance.to_json() if acceptance is not None else {"fitted": False}),
                    "source": stage.acceptance_source if stage is not None else None,
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
