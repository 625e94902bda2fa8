"""Adapter base classes: `Adapter` (what the service needs of anything a question is asked of) and
`DataAdapter` (one data source with its templates). The composite (composite.py) is an `Adapter`
that owns no templates and routes over its children. Both answer through the same Router, which the
runtime builds (runtime/build.py), so routing logic lives once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..api.health import Health
from ..api.requests import ADAPTER_NAME_PATTERN
from ..bulkhead import SEARCH_POOL, Bulkhead, run_on
from ..config.errors import ConfigIssue
from ..embedding.base import Embedder
from ..embedding.settings import EmbeddingSettings
from ..errors import QueryFailed
from ..intent.calibration import ScoreCalibration
from ..intent.fitted_models import FittedModels
from ..params.base import ParameterExtractor
from ..params.settings import ParameterExtractionSettings
from ..rerankers.settings import RerankerSettings
from ..rerankers.shared_cache import SharedRerankCache
from ..resilience import CircuitBreakerSettings, RetrySettings, SourceGuard
from ..routing.policy import RoutingPolicy
from ..routing.settings import CompositeRetrievalSettings
from ..routing.stages.base import ScoringStage
from ..stores.base import StoreHit, TemplateStore
from ..stores.group_search import GroupSearch
from ..templates import Template
from ..templates.library import ParsedBody
from .result_cache import CachedRows, ResultCache, ResultCacheSettings, cache_key, ttl_for
from .source_check import SourceCheck


class AdapterSettings(BaseModel):
    """Keys every adapter entry has. Each type extends this with its own block (extra keys are errors)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        pattern=ADAPTER_NAME_PATTERN, description="unique across all adapter files; letters, digits, `_`, `.`, `-`"
    )
    type: str = Field(
        description="`sql`, `duckdb`, `mongodb`, `elasticsearch`, `http`, `graphql`, `composite` or a plug-in's type"
    )
    enabled: bool = Field(True, description="false: the adapter is not loaded at all")
    description: str = Field(
        "", description="what the adapter answers (shown in the catalogue and the MCP tool descriptions)"
    )


class DataAdapterSettings(AdapterSettings):
    templates: list[str] = Field(
        min_length=1, description="globs of template library files (relative or absolute; `**` matches any depth)"
    )
    confidence_threshold: float = Field(
        0.45, ge=0.0, le=1.0, description="the score needed to route when this adapter is queried directly"
    )
    max_templates: int = Field(5, ge=1, le=100, description="candidates fetched when queried directly")
    max_rows: int = Field(1000, ge=1, description="row cap of an answer (the response says when rows were truncated)")
    query_timeout: float = Field(
        10.0, gt=0, description="seconds a query may run; a slow query is interrupted and answered with 504"
    )
    embedding: EmbeddingSettings | None = Field(
        None,
        description="a different embedding model for this adapter's store (same keys as config.yaml's `embedding`)",
    )
    parameter_extraction: ParameterExtractionSettings | None = Field(
        None,
        description="how parameters are filled from questions: fuzzy floor, clock, value lists, the learned "
        "extractor, the LLM pass",
    )
    retries: RetrySettings = Field(default_factory=RetrySettings, description="retries of transient failures")
    circuit_breaker: CircuitBreakerSettings = Field(
        default_factory=CircuitBreakerSettings, description="the circuit breaker: a dead source answers 503 at once"
    )
    # bulkhead (server/bulkhead.py): this source's own bounded concurrency
    max_concurrency: int = Field(8, ge=1, le=256, description="queries running on this source at once")
    queue_timeout: float = Field(5.0, gt=0, le=300, description="seconds a query waits for a free slot, then 503")


@dataclass
class QueryResult:
    rows: list[dict[str, Any]]
    columns: list[str]
    truncated: bool = False
    from_cache: bool = False  # answered by the result cache, the source was not asked


@dataclass
class AdapterContext:
    """What the runtime hands an adapter when it builds it: where it lives and the services it uses.

    Data adapters get their embedder, store, extractor and templates; a composite gets `lookup` (the
    runtime's adapters by name, so it always sees its current children), its effective retrieval
    settings, the named reranker connections and the runtime's cache of fitted intent models.
    """

    root: Path
    embedder: Embedder | None = None
    store: TemplateStore | None = None
    extractor: ParameterExtractor | None = None
    templates: dict[str, Template] = field(default_factory=dict)
    lookup: Callable[[str], Adapter] | None = None
    retrieval: CompositeRetrievalSettings | None = None
    rerankers: Mapping[str, RerankerSettings] = field(default_factory=dict)
    fitted_models: FittedModels | None = None
    result_cache: ResultCache | None = None
    result_cache_settings: ResultCacheSettings = field(default_factory=ResultCacheSettings)
    shared_rerank_cache: SharedRerankCache | None = None  # rerank scores in Redis (rerank_cache.backend redis)


class Adapter(ABC):
    """What every adapter is to the service: a name, templates a question may route to, a policy."""

    type_name: ClassVar[str]
    settings_model: ClassVar[type[AdapterSettings]] = AdapterSettings

    def __init__(self, settings: AdapterSettings, context: AdapterContext) -> None:
        self.settings = settings
        self.context = context

    @property
    def name(self) -> str:
        return self.settings.name

    @abstractmethod
    def routing_sources(self) -> list[DataAdapter]:
        """The data adapters whose templates a question to this adapter may route to."""

    @abstractmethod
    def routing_policy(self) -> RoutingPolicy:
        """Threshold, candidates per source, search and ambiguity settings for questions asked here."""

    def score_calibrations(self) -> Mapping[str, ScoreCalibration]:
        """Per embedding model, the map of its cosines to the common scale (a composite of mixed models)."""
        return {}

    def routing_stages(self) -> Sequence[ScoringStage]:
        """Scoring stages after the embedding search (none for a data adapter asked directly)."""
        return ()

    def group_search(self) -> GroupSearch | None:
        """How the routing sources' stores are searched together (a composite's stacked view); None:
        each on its own."""
        return None

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Statistics for this adapter (templates counted as templates, not vectors)."""

    async def start(self) -> None:  # noqa: B027 - optional hook
        """Open pools / clients, fit models. Called once before the adapter serves."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release whatever `start` opened."""

    async def health(self) -> dict[str, Any]:
        """Cheap liveness: {'status': 'ok'|'down', 'reason'?: str}."""
        return {"status": Health.OK}


class DataAdapter(Adapter):
    """An adapter over one data source: owns templates (parsed from its `body_key` in the libraries),
    a template store and an embedder, and executes exactly the template it is handed."""

    body_key: ClassVar[str]  # the template body key in a library ("sql", "mongodb", ...)
    # True when `execute` blocks a thread: it then takes its bulkhead slot itself (`self.bulkhead.thread`),
    # held until the thread returns; otherwise `run` holds a slot around the awaited `execute`.
    runs_in_threads: ClassVar[bool] = False

    def __init__(self, settings: AdapterSettings, context: AdapterContext) -> None:
        super().__init__(settings, context)
        self.templates: dict[str, Template] = dict(context.templates)
        self._embedder = context.embedder
        self._store = context.store
        self.guard = SourceGuard.for_settings(settings)  # retries + circuit breaker around `execute`
        assert isinstance(settings, DataAdapterSettings)
        self.bulkhead = Bulkhead(settings.name, settings.max_concurrency, settings.queue_timeout)
        self.source_check: SourceCheck | None = None  # what the load's check against the source found
        if context.extractor is not None:
            context.extractor.bind_values_source(self)  # values_from lists run on this adapter's source

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            raise RuntimeError(f"adapter {self.name} has no embedder")
        return self._embedder

    @property
    def store(self) -> TemplateStore:
        if self._store is None:
            raise RuntimeError(f"adapter {self.name} has no template store")
        return self._store

    @property
    def extractor(self) -> ParameterExtractor:
        if self.context.extractor is None:
            raise RuntimeError(f"adapter {self.name} has no parameter extractor")
        return self.context.extractor

    # --- templates ------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        """Parse and check a template's query body; raise ValueError with a clear message."""

    @classmethod
    def check_templates(cls, settings: Any, templates: list[Template]) -> list[ConfigIssue]:
        """Checks that need the adapter's settings as well as the body (e.g. the SQL dialect of its
        URL); run by the loader, so `validate` reports them without connecting to anything."""
        return []

    async def search_templates(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        return await run_on(SEARCH_POOL, self.store.search, vector, k)

    @property
    def searches_inline(self) -> bool:
        """True when a search is pure in-process arithmetic (the in-memory store, search not overridden):
        the router then calls `search_inline` in place instead of paying a task and a timeout per child."""
        return (
            self._store is not None
            and not self._store.blocking
            and type(self).search_templates is DataAdapter.search_templates
        )

    def search_inline(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        return self.store.search(vector, k)

    # --- routing --------------------------------------------------------------------------
    def routing_sources(self) -> list[DataAdapter]:
        return [self]

    def routing_policy(self) -> RoutingPolicy:
        s = self.settings
        assert isinstance(s, DataAdapterSettings)
        return RoutingPolicy(confidence_threshold=s.confidence_threshold, max_templates_per_source=s.max_templates)

    # --- execution ------------------------------------------------------------------------
    def render_request(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> dict[str, Any]:
        """The exact request a structured-body adapter sends (tests assert on it)."""
        raise NotImplementedError(f"adapter type {self.type_name} renders no request")

    def request_for(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> dict[str, Any]:
        """`render_request`, with a value that does not fit the body reported as a failed query."""
        try:
            return self.render_request(template, params, max_rows)
        except ValueError as exc:
            raise QueryFailed(self.name, f"template '{template.id}': {exc}") from None

    async def run(self, template: Template, params: dict[str, Any], *, cached: bool = True) -> QueryResult:
        """What callers use: the result cache when the template's answers may be cached, else `execute`
        through this source's retries, circuit breaker and bulkhead."""
        cache = self.context.result_cache if cached else None
        ttl = ttl_for(template, self.context.result_cache_settings) if cache is not None else 0.0
        if cache is None or ttl <= 0:
            return await self._attempts(template, params)
        await self.check_source()  # a removed database file answers 503 even for cached questions
        key = cache_key(self.name, self._cache_scope, template, params)
        hit = await cache.get(key)
        if hit is not None:
            return QueryResult(hit.rows, hit.columns, hit.truncated, from_cache=True)
        result = await self._attempts(template, params)
        await cache.put(key, CachedRows(result.rows, result.columns, result.truncated), ttl)
        return result

    async def list_rows(self, template: Template, max_rows: int) -> QueryResult:
        """Rows of a values_from query (server/params/values_from.py): never from the result cache, and
        capped at the list's own `max_values` instead of the adapter's `max_rows`, which is meant for
        answers; `truncated` says the source holds more."""
        return await self._attempts(template, {}, max_rows)

    async def _attempts(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        if self.runs_in_threads:
            return await self.guard.call(lambda: self.execute(template, params, max_rows))
        return await self.guard.call(lambda: self.bulkhead.call(lambda: self.execute(template, params, max_rows)))

    async def health(self) -> dict[str, Any]:
        """The source's own check (`source_health`), unless the circuit breaker is open: then every query
        answers 503 at once, whatever a ping of the source says (a corrupt file still answers SELECT 1)."""
        breaker = self.guard.breaker
        found: dict[str, Any]
        if breaker.state == "open":
            found = {"status": Health.DOWN, "reason": breaker.why_open()}
        else:
            found = await self.source_health()
        if self.source_check is not None and self.source_check.status == "unchecked":
            found = {**found, "templates_checked": self.source_check.to_json()}  # why its templates were not
        extraction = self.context.extractor.status() if self.context.extractor is not None else {}
        return {**found, "parameter_extraction": extraction} if extraction else found

    async def source_health(self) -> dict[str, Any]:
        """Cheap liveness of the source itself: {'status': 'ok'|'down', 'reason'?: str}."""
        return {"status": Health.OK}

    async def check_against_source(self) -> SourceCheck:
        """Ask the live source whether each template would run (server/adapters/source_check.py), reading
        no rows; run when a config loads. Types without a schema to ask (http, graphql) keep this default."""
        return SourceCheck(self.name, "not_checked", len(self.templates))

    async def check_source(self) -> None:
        """Asked before the result cache and before every query: raise SourceUnavailable when the source
        must not answer at all, not even from the cache (its database file was removed); a source opened
        again on other data (the file was replaced) drops its cached answers (`forget_cached`)."""

    async def forget_cached(self) -> None:
        """Drop this adapter's cached answers: they are older than what the source now holds."""
        if self.context.result_cache is not None:
            await self.context.result_cache.forget(self.name)

    @property
    def _cache_scope(self) -> str:
        """The adapter's settings as loaded: a changed connection or row cap never reuses older answers."""
        return self.settings.model_dump_json()

    def row_cap(self, max_rows: int | None) -> int:
        """The rows a query may return: the caller's cap (a values_from list's max_values), else the
        adapter's `max_rows`. Every `execute` reads its cap here and fetches one row more, so that
        `truncated` is known."""
        assert isinstance(self.settings, DataAdapterSettings)
        return self.settings.max_rows if max_rows is None else max_rows

    @staticmethod
    def answering(max_rows: int | None) -> bool:
        """True for an answer (no caller's cap): it is also cut by the template's own limit (a SQL LIMIT, a
        find's limit, a search's size), which then asks for one row more so that `truncated` tells "the
        first 100 of more" from "all 100" (own_limit.py). A values_from list (its max_values as the cap)
        runs its query as written: a limit there is the operator's choice, not a cut answer."""
        return max_rows is None

    @abstractmethod
    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        """Run exactly this template with these validated parameters (one attempt; `run` adds retries),
        returning at most `row_cap(max_rows)` rows."""

    # --- lifecycle ------------------------------------------------------------------------
    async def close(self) -> None:
        """Release the source's pools / clients, then the extractor's."""
        await self.close_source()
        self.bulkhead.close()
        if self.context.extractor is not None:
            await self.context.extractor.close()

    async def close_source(self) -> None:
        """Release pools / clients of the data source."""

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"type": self.type_name}
        if self._store is not None:
            info["total_templates"] = len(self.templates)
            info["collection_name"] = self.store.collection_name
        info["bulkhead"] = self.bulkhead.snapshot()
        return info
