"""The routing log's wiring into the app: a hook for answered questions, a middleware for questions
that end in a 5xx or a timeout, and the log's start and stop with the app."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from ..errors import IntentRouterError
from ..runtime.holder import LoadStatus, RuntimeHolder
from ..service.observers import Answered, AnswerObserver
from ..start_gate import START_GATE
from ..stats import RoutingLog
from ..stats.capture import record_error, record_for

log = logging.getLogger("intent_router.stats")

STATS_LOG = web.AppKey("stats_log", RoutingLog)
LOGGED_PATHS = {"/v1/query": "query", "/v1/test_routing": "test_routing"}


@dataclass
class _InFlight:
    """Per request: when it started and whether the success hook already logged it."""

    started: float
    logged: bool = False


_IN_FLIGHT: contextvars.ContextVar[_InFlight | None] = contextvars.ContextVar("routing_in_flight", default=None)


def _elapsed_ms(state: _InFlight | None) -> float | None:
    return None if state is None else round((time.perf_counter() - state.started) * 1000, 3)


class RoutingLogWiring(AnswerObserver):
    def __init__(self, app: web.Application, holder: RuntimeHolder) -> None:
        self.app = app
        self.holder = holder

    @property
    def routing_log(self) -> RoutingLog | None:
        return self.app.get(STATS_LOG)

    def answered(self, event: Answered) -> None:
        state = _IN_FLIGHT.get()
        rlog = self.routing_log
        if rlog is None:
            return
        rlog.record(record_for(event.kind, event.adapter, event.question, event.result, _elapsed_ms(state)))
        if state is not None:
            state.logged = True

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        kind = LOGGED_PATHS.get(request.path) if request.method == "POST" else None
        if kind is None or self.routing_log is None:
            return await handler(request)
        state = _InFlight(time.perf_counter())
        token = _IN_FLIGHT.set(state)
        try:
            return await handler(request)
        except IntentRouterError as exc:
            if exc.status >= 500 and not state.logged:
                await self._log_error(request, kind, exc, state)
            raise
        except (asyncio.CancelledError, web.HTTPException):
            raise
        except Exception as exc:
            if not state.logged:
                await self._log_error(request, kind, exc, state)
            raise
        finally:
            _IN_FLIGHT.reset(token)

    async def _log_error(self, request: web.Request, kind: str, exc: BaseException, state: _InFlight) -> None:
        adapter = question = None
        try:  # the body was read by the handler; aiohttp keeps it
            body = await request.json()
            question = " ".join(str(body.get("query", "")).split()) or None
            adapter = body.get("adapter") or self.holder.current.default_adapter().name
        except Exception:
            pass
        rlog = self.routing_log
        if rlog is not None:
            rlog.record(record_error(kind, adapter, question, exc, _elapsed_ms(state)))

    async def on_startup(self, app: web.Application) -> None:
        runtime = self.holder.current
        settings = runtime.config.app.stats
        if not settings.enabled:
            return
        rlog = RoutingLog(settings, runtime.config.root)
        cluster = runtime.config.app.cluster
        rlog.replica = cluster.name() if cluster.enabled else None  # as /v1/cluster names this replica
        if rlog.local:
            rlog.start_soon(app.get(START_GATE))  # its own file: opened once the server has answered
        else:
            await rlog.start()  # a database shared by the replicas must answer for a replica to start
        app[STATS_LOG] = rlog
        self.holder.load_listeners.append(self._on_load)

    def _on_load(self, status: LoadStatus) -> None:
        """Every good load hands the log its live settings (turning store_queries off applies at once)."""
        rlog = self.routing_log
        if status.ok and rlog is not None:
            rlog.apply(self.holder.current.config.app.stats)

    async def on_cleanup(self, app: web.Application) -> None:
        if self._on_load in self.holder.load_listeners:
            self.holder.load_listeners.remove(self._on_load)
        rlog = app.get(STATS_LOG)
        if rlog is not None:
            await rlog.close()


def install_routing_log(
    app: web.Application, holder: RuntimeHolder, observers: list[AnswerObserver]
) -> RoutingLogWiring:
    wiring = RoutingLogWiring(app, holder)
    observers.append(wiring)
    app.middlewares.append(wiring.middleware)
    app.on_startup.append(wiring.on_startup)
    app.on_cleanup.append(wiring.on_cleanup)
    return wiring
