"""Valid values of a parameter listed by a query on its own source, cached per runtime.

The extractor is built before its adapter, so the adapter is bound afterwards with
`bind_values_source(adapter)` (the DataAdapter base class does this when it is constructed). A reload builds a
new runtime and so a new, empty cache: lists are refreshed on reload, and optionally after a TTL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import QueryFailed
from ..templates import ParameterSpec, Template
from ..templates.library import parse_values_query

if TYPE_CHECKING:
    from ..adapters.base import DataAdapter

log = logging.getLogger("intent_router.params")

MAX_VALUES = 50_000  # a list longer than this is cut: matching is meant for names, not for whole tables

ValuesRunner = Callable[[str, Any], Awaitable[list[Any]]]  # (query id, raw query) -> values


def adapter_values_runner(adapter: DataAdapter) -> ValuesRunner:
    """Run a values_from query through the adapter that owns the template, like any template body.

    The loader already refused queries the adapter's guard rejects; one that reaches here anyway (a
    runtime built by hand) is a failed query of that adapter (502), like a failing source."""

    async def run(query_id: str, raw_query: Any) -> list[Any]:
        try:
            parsed = parse_values_query(adapter.parse_body, raw_query)
        except ValueError as exc:
            raise QueryFailed(adapter.name, f"values_from query {query_id}: {exc}") from None
        template = Template(
            id=query_id, description=f"valid values ({query_id})", body_key=adapter.body_key, body=parsed.value
        )
        result = await adapter.run(template, {}, cached=False)  # the values cache below is its own
        values: list[Any] = []
        seen: set[str] = set()
        for row in result.rows:
            if not row:
                continue
            # documents (MongoDB, JSON APIs) may lack the first column: such rows list nothing
            value = row.get(result.columns[0]) if result.columns else next(iter(row.values()))
            if value is None or str(value).casefold() in seen:
                continue
            seen.add(str(value).casefold())
            values.append(value)
            if len(values) >= MAX_VALUES:
                break
        return values

    return run


class ValuesCache:
    """One list per (template, parameter); concurrent first requests share one query."""

    def __init__(self, ttl_seconds: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl_seconds
        self.runner: ValuesRunner | None = None
        self._clock = clock
        self._lists: dict[str, tuple[float, list[Any]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.queries_run = 0

    def bind(self, runner: ValuesRunner) -> None:
        self.runner = runner
        self._lists.clear()

    async def get(self, template: Template, spec: ParameterSpec) -> list[Any] | None:
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
            values = await self.runner(f"{key}.values", spec.values_from.query)
            self.queries_run += 1
            self._lists[key] = (self._clock(), values)
            return values

    def _fresh(self, key: str) -> list[Any] | None:
        entry = self._lists.get(key)
        if entry is None:
            return None
        loaded, values = entry
        if self.ttl is not None and self._clock() - loaded > self.ttl:
            return None
        return values
