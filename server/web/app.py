"""The aiohttp application: JSON in, JSON out, errors as {"error": {"code", "message"}}."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from pydantic import ValidationError

from ..adapters.base import Adapter
from ..api.requests import QueryRequest, ReloadQuery, TestRoutingRequest
from ..api.responses import HealthResponse, LoadStatusView
from ..auth import Principal, authenticate, presented_key, require
from ..errors import BadRequest, IntentRouterError, RequestTimeout, TooManyRequests, error_body
from ..mcp.http import MCP, install_mcp
from ..resilience import request_deadline
from ..routing.normalise import checked_question
from ..runtime.build import Runtime
from ..runtime.holder import RuntimeHolder
from ..runtime.start_gate import arm_start_gate, install_start_gate
from ..service import answer as answering
from ..service.access import adapter_for
from .catalogue_routes import install_catalogue
from .cluster_routes import CLUSTER, install_cluster
from .dashboard_routes import install_stats
from .docs_routes import install_docs
from .encoder_lanes import install_encoder_lanes
from .health_view import config_view, visible_adapters
from .metrics import install_metrics
from .query_string import parse_query_string
from .request_body import BODY_TIMEOUT, MAX_BODY_BYTES, body_middleware, read_json
from .routing_log import STATS_LOG

log = logging.getLogger("intent_router.web")

HOLDER = web.AppKey("holder", RuntimeHolder)
HOOKS = web.AppKey("hooks", list)


def error_response(exc: IntentRouterError) -> web.Response:
    headers = {}
    if exc.status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="intent-router"'
    if isinstance(exc, TooManyRequests):
        headers["Retry-After"] = str(exc.retry_after)
    return web.json_response(exc.to_json(), status=exc.status, headers=headers or None)


@web.middleware
async def errors_middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    try:
        return await handler(request)
    except IntentRouterError as exc:
        return error_response(exc)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(exc.status, "http_error")
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None  # 405: what the path takes
        return web.json_response(error_body(code, exc.reason), status=exc.status, headers=allow)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return web.json_response(error_body("internal_error", "internal server error"), status=500)


Q = TypeVar("Q", bound=QueryRequest)


def parse_query(data: dict[str, Any], max_chars: int, model: type[Q] = QueryRequest) -> Q:  # type: ignore[assignment]
    try:
        req = model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or "body"
        msg = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
        raise BadRequest(f"{field}: {msg}") from None
    req.query = checked_question(req.query, max_chars, "query")  # the model is this request's own
    return req


@dataclass
class Asker:
    """Who asks, and the runtime the question is answered on (held for the request's duration)."""

    principal: Principal
    runtime: Runtime


class Handlers:
    def __init__(self, holder: RuntimeHolder) -> None:
        self.holder = holder

    def principal(self, request: web.Request) -> Principal:
        return authenticate(request, self.holder.current.config.app.auth)

    async def _question(self, request: web.Request, run, model: type[QueryRequest] = QueryRequest):
        principal = self.principal(request)
        require(principal, "client")
        runtime = self.holder.acquire()
        try:
            req = parse_query(await read_json(request), runtime.config.app.server.max_question_chars, model)
            adapter = adapter_for(runtime, principal, req.adapter)
            timeout = runtime.config.app.server.request_timeout
            try:
                # retries of a failing source stop in time; asyncio.timeout cancels the handler in place
                # (wait_for would run it as a task of its own, a task and a loop turn more per request)
                with request_deadline(timeout):
                    async with asyncio.timeout(timeout):
                        return await run(adapter, req, Asker(principal, runtime))
            except TimeoutError:
                raise RequestTimeout(f"request timed out after {timeout:g} s") from None
        finally:
            self.holder.release(runtime)

    async def query(self, request: web.Request) -> web.Response:
        async def run(adapter: Adapter, req: QueryRequest, asker: Asker) -> web.Response:
            sessions, owner = asker.runtime.sessions, asker.principal.name
            result = await answering.answer_in_session(
                adapter, req.query, sessions, req.session_id, owner, req.execution
            )
            for hook in request.app[HOOKS]:
                hook("query", adapter, req.query, result)
            return web.json_response(text=result.body_text())

        return await self._question(request, run)

    async def test_routing(self, request: web.Request) -> web.Response:
        async def run(adapter: Adapter, req: TestRoutingRequest, asker: Asker) -> web.Response:
            result = await answering.explain_routing(adapter, req.query, req.detail, req.execution)
            for hook in request.app[HOOKS]:
                hook("test_routing", adapter, req.query, result)
            return web.json_response(text=result.body_text())

        return await self._question(request, run, TestRoutingRequest)

    async def health(self, request: web.Request) -> web.Response:
        runtime = self.holder.current
        auth = runtime.config.app.auth
        details = not auth.enabled or presented_key(request) is not None
        principal = authenticate(request, auth) if details else None  # a wrong key is a 401, as everywhere
        adapters = {}
        checks = await asyncio.gather(*(a.health() for a in runtime.adapters.values()), return_exceptions=True)
        for adapter, check in zip(runtime.adapters.values(), checks, strict=True):
            adapters[adapter.name] = check if isinstance(check, dict) else {"status": "down", "reason": "check failed"}
        load = self.holder.last_load
        good = self.holder.last_good_load
        adapters_ok = bool(adapters) and all(a.get("status") == "ok" for a in adapters.values())  # none: not ok
        member = request.app.get(CLUSTER)
        cluster = member.health() if member is not None else None
        shared = await self._shared_engines(request, runtime)
        mcp = endpoint.health() if (endpoint := request.app.get(MCP)) is not None else None
        healthy = (
            adapters_ok
            and (load is None or load.ok)
            and (cluster is None or cluster["status"] == "ok")
            and all(e["status"] == "ok" for e in shared.values())
            and (mcp is None or mcp["status"] not in ("down", "saturated"))
        )
        if principal is None:  # a load balancer's probe: whether it is healthy, not what is configured
            return web.json_response(HealthResponse(status="ok" if healthy else "degraded").dump())
        body = HealthResponse(
            status="ok" if healthy else "degraded",  # the server's, whatever part of it this key sees
            adapters=visible_adapters(principal, adapters),
            routing_log=rlog.health() if (rlog := request.app.get(STATS_LOG)) else {"enabled": False},
            config=config_view(principal, load, good, self.holder.restart_required()),
            config_hash=self.holder.config_hash,
            cluster=cluster,
            shared=shared or None,
            mcp=mcp,
        )
        return web.json_response(body.dump())

    async def _shared_engines(self, request: web.Request, runtime: Runtime) -> dict[str, Any]:
        """Engines shared with other replicas (Redis sessions and caches, a database routing log): one
        that is unreachable makes the replica degraded (it keeps answering with local state). One that
        was down is asked again first, so the replica recovers even when no request uses it."""
        engines = runtime.shared_engines()
        await asyncio.gather(*(engine.recheck() for engine in engines.values()))
        shared = {name: state for name, engine in engines.items() if (state := engine.health()) is not None}
        rlog = request.app.get(STATS_LOG)
        if rlog is not None and not rlog.local:
            failing = rlog.health()["status"] != "ok"
            shared["routing_log"] = {"status": "down" if failing else "ok", "backend": rlog.engine.dialect.name}
        return shared

    async def reload(self, request: web.Request) -> web.Response:
        require(self.principal(request), "admin")
        options = parse_query_string(ReloadQuery, request.query)
        status = await self.holder.reload(allow_removal=options.allow_removal)
        body = LoadStatusView.model_validate(status.to_json()).dump()
        return web.json_response(body, status=200 if status.ok else 422)


def create_app(holder: RuntimeHolder) -> web.Application:
    app = web.Application(middlewares=[errors_middleware, body_middleware], client_max_size=MAX_BODY_BYTES)
    app[HOLDER] = holder
    app[BODY_TIMEOUT] = lambda: holder.current.config.app.server.body_timeout
    app[HOOKS] = []
    install_start_gate(app)  # optional background starts wait for the first answer (before what uses it)
    h = Handlers(holder)
    app.router.add_post("/v1/query", h.query)
    app.router.add_post("/v1/test_routing", h.test_routing)
    app.router.add_get("/health", h.health)
    app.router.add_post("/admin/reload", h.reload)
    install_stats(app, holder, app[HOOKS])  # routing log, /v1/routing/statistics, /dashboard
    install_catalogue(app, holder)  # GET /v1/templates
    install_cluster(app, holder, app[HOOKS])  # GET /v1/cluster; reload announcements when cluster.enabled
    install_metrics(app, holder, app[HOOKS])  # GET /metrics (Prometheus)
    install_docs(app, lambda: holder.current.config.app.auth.enabled)  # GET /openapi.json, /docs
    install_mcp(app, holder, app[HOOKS])  # /mcp: MCP over streamable HTTP
    install_encoder_lanes(app, holder)  # the local encoder's lanes, once the server has answered
    arm_start_gate(app)  # last: its fallback counts from the end of the other starts
    return app
