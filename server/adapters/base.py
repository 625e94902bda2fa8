"""Adapter base classes: `Adapter` (anything an adapter entry of the config builds: settings, lifecycle,
health) and `DataAdapter` (one data source: its templates and how it executes them). Nothing here knows
how a question is routed: routing/routable.py wraps a DataAdapter with its embedder, template store and
parameter extractor, and the composite (routing/composite.py) routes over those wrappers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ..api.health import Health
from ..api.requests import ADAPTER_NAME_PATTERN
from ..bulkhead import Bulkhead
from ..config.errors import ConfigIssue
from ..config.parsed_body import ParsedBody
from ..embedding.settings import EmbeddingSettings
from ..errors import QueryFailed
from ..params.settings import ParameterExtractionSettings
from ..resilience import CircuitBreakerSettings, RetrySettings, SourceGuard
from ..templates import Template
from .accepted_bodies import AcceptedBodies
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
    count_timeout: float = Field(
        2.0,
        gt=0,
        description='seconds the count of a cut list may take for a "how many" question (at most query_timeout); '
        "a slower count is interrupted and the answer goes without the total",
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


@dataclass(frozen=True)
class Counting:
    """What counts every row a list answers: a template whose one row holds the number, run like any other,
    and the values it runs with (those of the list, less the limit it lifted)."""

    template: Template
    params: dict[str, Any]

    @classmethod
    def of(cls, listed: Template, body: Any, params: dict[str, Any], lifted: frozenset[str]) -> Counting:
        """The list `listed` with `body` for its query and the parameters in `lifted` gone."""
        template = listed.model_copy(
            update={
                "body": body,
                "parameters": [p for p in listed.parameters if p.name not in lifted],
                "result_format": "summary",
            }
        )
        return cls(template, {k: v for k, v in params.items() if k not in lifted})


@dataclass
class AdapterContext:
    """What the runtime hands a data adapter when it builds it: where it lives, its templates and the
    result cache its answers may come from."""

    root: Path
    templates: dict[str, Template] = field(default_factory=dict)
    result_cache: ResultCache | None = None
    result_cache_settings: ResultCacheSettings = field(default_factory=ResultCacheSettings)
    # bodies its database file accepted at earlier loads (accepted_bodies.py): not asked again
    accepted_bodies: AcceptedBodies = field(default_factory=lambda: AcceptedBodies(None))


# a shorter time limit for the queries of the task that set it (DataAdapter.count: a count within count_timeout)
_QUERY_BUDGET: ContextVar[float | None] = ContextVar("query_budget", default=None)


class Adapter(ABC):
    """What every adapter entry builds: a name, settings, a lifecycle and a health check."""

    type_name: ClassVar[str]
    settings_model: ClassVar[type[AdapterSettings]] = AdapterSettings

    def __init__(self, settings: AdapterSettings) -> None:
        self.settings = settings

    @property
    def name(self) -> str:
        return self.settings.name

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
    """An adapter over one data source: owns templates (parsed from its `body_key` in the libraries)
    and executes exactly the template it is handed, through its retries, circuit breaker, bulkhead and
    result cache."""

    body_key: ClassVar[str]  # the template body key in a library ("sql", "mongodb", ...)
    # True when `execute` blocks a thread: it then takes its bulkhead slot itself (`self.bulkhead.thread`),
    # held until the thread returns; otherwise `run` holds a slot around the awaited `execute`.
    runs_in_threads: ClassVar[bool] = False

    def __init__(self, settings: AdapterSettings, context: AdapterContext) -> None:
        super().__init__(settings)
        self.context = context
        self.templates: dict[str, Template] = dict(context.templates)
        self.guard = SourceGuard.for_settings(settings)  # retries + circuit breaker around `execute`
        assert isinstance(settings, DataAdapterSettings)
        self.bulkhead = Bulkhead(settings.name, settings.max_concurrency, settings.queue_timeout)
        self.source_check: SourceCheck | None = None  # what the load's check against the source found

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

    async def run(
        self, template: Template, params: dict[str, Any], *, cached: bool = True, guarded: bool = True
    ) -> QueryResult:
        """What callers use: the result cache when the template's answers may be cached, else `execute`
        through this source's bulkhead and (`guarded`) its retries and circuit breaker."""
        cache = self.context.result_cache if cached else None
        ttl = ttl_for(template, self.context.result_cache_settings) if cache is not None else 0.0
        if cache is None or ttl <= 0:
            return await self._attempts(template, params, guarded=guarded)
        await self.check_source()  # a removed database file answers 503 even for cached questions
        key = cache_key(self.name, self._cache_scope, template, params)
        hit = await cache.get(key)
        if hit is not None:
            return QueryResult(hit.rows, hit.columns, hit.truncated, from_cache=True)
        result = await self._attempts(template, params, guarded=guarded)
        await cache.put(key, CachedRows(result.rows, result.columns, result.truncated), ttl)
        return result

    async def count(self, counting: Counting) -> QueryResult:
        """Run a count (`counting`'s template) within `count_timeout`, through the result cache and the
        bulkhead but outside the retries and the circuit breaker: a count that is slow or fails leaves the
        list's answer as it was, and says nothing about the source's health."""
        assert isinstance(self.settings, DataAdapterSettings)
        budget = _QUERY_BUDGET.set(self.settings.count_timeout)
        try:
            return await self.run(counting.template, counting.params, guarded=False)
        finally:
            _QUERY_BUDGET.reset(budget)

    @property
    def query_timeout(self) -> float:
        """Seconds a query may run: the adapter's `query_timeout`, or less within `count`."""
        assert isinstance(self.settings, DataAdapterSettings)
        budget = _QUERY_BUDGET.get()
        return self.settings.query_timeout if budget is None else min(budget, self.settings.query_timeout)

    async def list_rows(self, template: Template, max_rows: int) -> QueryResult:
        """Rows of a values_from query (server/params/values_from.py): never from the result cache, and
        capped at the list's own `max_values` instead of the adapter's `max_rows`, which is meant for
        answers; `truncated` says the source holds more."""
        return await self._attempts(template, {}, max_rows)

    async def _attempts(
        self, template: Template, params: dict[str, Any], max_rows: int | None = None, guarded: bool = True
    ) -> QueryResult:
        def once() -> Awaitable[QueryResult]:
            if self.runs_in_threads:  # execute takes its bulkhead slot itself
                return self.execute(template, params, max_rows)
            return self.bulkhead.call(lambda: self.execute(template, params, max_rows))

        return await (self.guard.call(once) if guarded else once())

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
        return found

    async def source_health(self) -> dict[str, Any]:
        """Cheap liveness of the source itself: {'status': 'ok'|'down', 'reason'?: str}."""
        return {"status": Health.OK}

    async def check_against_source(self) -> SourceCheck:
        """Ask the live source whether each template would run (server/adapters/source_check.py), reading
        no rows; run when a config loads. Types without a schema to ask (http, graphql) keep this default."""
        return SourceCheck(self.name, "not_checked", len(self.templates))

    def source_identity(self) -> str | None:
        """What decides the source's answer to a body, when a string can say it (a database file as it is
        now, the driver, the connection settings): bodies it accepted are then not asked again while it
        stays the same (accepted_bodies.py). None: always ask (a server database can change at any time)."""
        return None

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

    def counting(self, template: Template, params: dict[str, Any], defaults: frozenset[str]) -> Counting | None:
        """How to count every row `template` answers for `params`, its own limit lifted when that limit is a
        parameter in `defaults` (left at its default by the question): service/row_totals.py asks when a
        "how many" question got a cut list. None (this default): the source cannot count, or the limit is
        the question's own."""
        return None

    @abstractmethod
    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        """Run exactly this template with these validated parameters (one attempt; `run` adds retries),
        returning at most `row_cap(max_rows)` rows."""

    # --- lifecycle ------------------------------------------------------------------------
    async def close(self) -> None:
        """Release the source's pools / clients."""
        await self.close_source()
        self.bulkhead.close()

    async def close_source(self) -> None:
        """Release pools / clients of the data source."""

    def describe(self) -> dict[str, Any]:
        return {"type": self.type_name, "bulkhead": self.bulkhead.snapshot()}
