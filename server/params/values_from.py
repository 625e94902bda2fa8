"""Valid values of a parameter listed by a query on its own source, cached per runtime.

The extractor is built before its adapter, so the adapter is bound afterwards with
`bind_values_source(adapter)` (routing's RoutingSource does this when it wraps the adapter). Lists are
fetched when the runtime is built (`prefetch`, from the extractor's `prepare`), so a list over its
`max_values` refuses the load or reload with the template's file:line; a source that is down then is
logged, and its lists are fetched when a question first needs them. A reload builds new adapters
(and so new, empty caches) for what changed; lists are refreshed then, and optionally after a TTL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from ..config.errors import ConfigIssue
from ..errors import IntentRouterError, QueryFailed, SourceTimeout, SourceUnavailable
from ..templates import ParameterSpec, Template
from ..templates.library import ParsedBody, parse_values_query
from .value_list import ValueList

log = logging.getLogger("intent_router.params")


class ListedRows(Protocol):
    """The rows a values_from query returned (an adapter's QueryResult)."""

    @property
    def rows(self) -> list[dict[str, Any]]: ...

    @property
    def columns(self) -> list[str]: ...

    @property
    def truncated(self) -> bool: ...


class ValuesSource(Protocol):
    """What a values_from list needs of the data adapter that owns the template (satisfied by
    adapters/base.py's DataAdapter; declared here so that params depends on no adapter)."""

    @property
    def body_key(self) -> str: ...

    @property
    def name(self) -> str: ...

    def parse_body(self, raw: Any) -> ParsedBody: ...

    async def list_rows(self, template: Template, max_rows: int) -> ListedRows: ...


# (query id, raw query, row cap) -> the rows, `truncated` when the source holds more than the cap
ValuesRunner = Callable[[str, Any, int], Awaitable[ListedRows]]


def adapter_values_runner(adapter: ValuesSource) -> ValuesRunner:
    """Run a values_from query through the adapter that owns the template, like any template body but
    never from the result cache and capped at the list's max_values instead of the adapter's max_rows.

    The loader already refused queries the adapter's guard rejects; one that reaches here anyway (a
    runtime built by hand) is a failed query of that adapter (502), like a failing source."""

    async def run(query_id: str, raw_query: Any, max_rows: int) -> ListedRows:
        try:
            parsed = parse_values_query(adapter.parse_body, raw_query)
        except ValueError as exc:
            raise QueryFailed(adapter.name, f"values_from query {query_id}: {exc}") from None
        template = Template(
            id=query_id, description=f"valid values ({query_id})", body_key=adapter.body_key, body=parsed.value
        )
        return await adapter.list_rows(template, max_rows)

    return run


class TooManyValues(QueryFailed):
    """A values_from query returned more rows than its max_values: refused, never cut. `issue` names the
    template's file:line and the parameter (a load or reload error; later, a failed query)."""

    def __init__(self, source: str, template: Template, spec: ParameterSpec) -> None:
        assert spec.values_from is not None
        limit = spec.values_from.max_values
        index = next(i for i, p in enumerate(template.parameters) if p.name == spec.name)
        problem = f"the query lists more than {limit} rows (max_values); raise max_values or narrow the query"
        super().__init__(source, f"values_from of {template.id}.{spec.name}: {problem}")
        self.issue = ConfigIssue(
            template.source_file or "templates",
            template.source_line,
            f"templates[id={template.id}].parameters[{index}].values_from",
            problem,
        )


class ValuesCache:
    """One list per (template, parameter); concurrent first requests share one query."""

    def __init__(self, ttl_seconds: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl_seconds
        self.runner: ValuesRunner | None = None
        self.source = "values"  # the adapter's name, for errors
        self._clock = clock
        self._lists: dict[str, tuple[float, ValueList]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.queries_run = 0

    def bind(self, runner: ValuesRunner, source: str = "values") -> None:
        self.runner = runner
        self.source = source
        self._lists.clear()

    async def get(self, template: Template, spec: ParameterSpec) -> ValueList | None:
        """The stored values, or None when no source is bound (then matching falls back to free text)."""
        if spec.values_from is None:
            return None
        if self.runner is None:
            log.warning("values_from of %s.%s: no source bound to the extractor", template.id, spec.name)
            return None
        key = f"{template.id}.{spec.name}"
        cached = self._fresh(key)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._fresh(key)
            if cached is not None:
                return cached
            values = await self._fetch(key, template, spec)
            self._lists[key] = (self._clock(), values)
            return values

    async def _fetch(self, key: str, template: Template, spec: ParameterSpec) -> ValueList:
        assert self.runner is not None and spec.values_from is not None
        result = await self.runner(f"{key}.values", spec.values_from.query, spec.values_from.max_values)
        self.queries_run += 1
        if result.truncated:
            raise TooManyValues(self.source, template, spec)
        return ValueList.from_rows(result.rows, result.columns)

    async def prefetch(self, templates: Iterable[Template]) -> list[ConfigIssue]:
        """Fetch every list now; lists over their max_values are returned as issues (the load is refused).
        A source that is down or slow is logged and left for later: its lists are fetched when a question
        first needs one; a query that fails (a missing table) is logged and fails that question."""
        issues: list[ConfigIssue] = []
        for template in templates:
            for spec in template.parameters:
                if spec.values_from is None:
                    continue
                try:
                    await self.get(template, spec)
                except TooManyValues as exc:
                    issues.append(exc.issue)
                except (SourceUnavailable, SourceTimeout) as exc:
                    log.warning("values_from lists of %s not fetched at load, later on demand: %s", self.source, exc)
                    return issues
                except IntentRouterError as exc:
                    log.warning("values_from of %s.%s not fetched at load: %s", template.id, spec.name, exc)
        return issues

    def fetched(self, template: Template, spec: ParameterSpec) -> bool:
        """Whether the list is at hand (a question would not query the source for it)."""
        return self._fresh(f"{template.id}.{spec.name}") is not None

    def _fresh(self, key: str) -> ValueList | None:
        entry = self._lists.get(key)
        if entry is None:
            return None
        loaded, values = entry
        if self.ttl is not None and self._clock() - loaded > self.ttl:
            return None
        return values
