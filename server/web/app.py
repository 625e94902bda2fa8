"""The aiohttp application: JSON in, JSON out, errors as {"error": {"code", "message"}}."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web
from pydantic import ValidationError

from ..api.health import Health
from ..api.requests import QueryRequest, ReloadQuery, TestRoutingRequest
from ..api.responses import HealthResponse, LoadStatusView
from ..api.validation import first_problem
from ..auth import Principal, Role, authenticate, presented_key, require
from ..errors import BadRequest, IntentRouterError, TooManyRequests, error_body
from ..mcp.http import MCP, install_mcp
from ..runtime.build import Runtime
from ..runtime.holder import RuntimeHolder
from ..service.ask import ask
from ..service.observers import AnswerObserver
from ..start_gate import arm_start_gate, install_start_gate
from .catalogue_routes import install_catalogue
from .cluster_routes import CLUSTER, install_cluster
from .dashboard_routes import install_stats
from .docs_routes import install_docs
from .encoder_lanes import install_encoder_lanes
from .encoder_tune import BACKGROUND_TUNE, install_background_tune
from .health_view import config_view, tune_view, visible_adapters
from .host_guard import host_guard
from .metrics import install_metrics
from .query_string import parse_query_string
from .request_body import BODY_TIMEOUT, MAX_BODY_BYTES, body_middleware, read_json
from .routing_log import STATS_LOG

log = logging.getLogger("intent_router.web")

HOLDER = web.AppKey("holder", RuntimeHolder)
OBSERVERS = web.AppKey("observers", list[AnswerObserver])


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


def parse_query(data: dict[str, Any], model: type[Q] = QueryRequest) -> Q:  # type: ignore[assignment]
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(first_problem(exc, "body", "unknown field")) from None


class Handlers:
    def __init__(self, holder: RuntimeHolder) -> None:
        self.holder = holder

    def principal(self, request: web.Request) -> Principal:
        return authenticate(request, self.holder.current.config.app.auth)

    async def _answer(self, request: web.Request, model: type[QueryRequest]) -> web.Response:
        principal = self.principal(request)
        question = parse_query(await read_json(request), model)
        observers = request.app[OBSERVERS]
        result = await ask(self.holder, principal, question, observers)
        return web.json_response(text=result.body_text())

    async def query(self, request: web.Request) -> web.Response:
        return await self._answer(request, QueryRequest)

    async def test_routing(self, request: web.Request) -> web.Response:
        return await self._answer(request, TestRoutingRequest)

    async def health(self, request: web.Request) -> web.Response:
        runtime = self.holder.current
        auth = runtime.config.app.auth
        details = not auth.enabled or presented_key(request) is not None
        principal = authenticate(request, auth) if details else None  # a wrong key is a 401, as everywhere
        adapters = {}
        checks = await asyncio.gather(*(a.health() for a in runtime.adapters.values()), return_exceptions=True)
        for adapter, check in zip(runtime.adapters.values(), checks, strict=True):
            adapters[adapter.name] = (
                check if isinstance(check, dict) else {"status": Health.DOWN, "reason": "check failed"}
            )
        load = self.holder.last_load
        good = self.holder.last_good_load
        adapters_ok = bool(adapters) and all(a.get("status") == Health.OK for a in adapters.values())  # none: not ok
        member = request.app.get(CLUSTER)
        cluster = member.health() if member is not None else None
        shared = await self._shared_engines(request, runtime)
        mcp = endpoint.health() if (endpoint := request.app.get(MCP)) is not None else None
        tune = request.app.get(BACKGROUND_TUNE)
        healthy = (
            adapters_ok
            and (load is None or load.ok)
            and (cluster is None or cluster["status"] == Health.OK)
            and all(e["status"] == Health.OK for e in shared.values())
            and (mcp is None or mcp["status"] not in (Health.DOWN, Health.SATURATED))
        )
        if principal is None:  # a load balancer's probe: whether it is healthy, not what is configured
            return web.json_response(HealthResponse(status=Health.OK if healthy else Health.DEGRADED).dump())
        body = HealthResponse(
            status=Health.OK if healthy else Health.DEGRADED,  # the server's, whatever part of it this key sees
            adapters=visible_adapters(principal, adapters),
            routing_log=rlog.health() if (rlog := request.app.get(STATS_LOG)) else {"enabled": False},
            config=config_view(principal, load, good, self.holder.restart_required()),
            config_hash=self.holder.config_hash,
            cluster=cluster,
            shared=shared or None,
            mcp=mcp,
            encoder_tune=tune_view(principal, tune.state.dump(), runtime.config.app.tune.on_reload)
            if tune is not None
            else None,
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
            failing = rlog.health()["status"] != Health.OK
            shared["routing_log"] = {
                "status": Health.DOWN if failing else Health.OK,
                "backend": rlog.engine.dialect.name,
            }
        return shared

    async def reload(self, request: web.Request) -> web.Response:
        require(self.principal(request), Role.ADMIN)
        options = parse_query_string(ReloadQuery, request.query)
        status = await self.holder.reload(allow_removal=options.allow_removal)
        body = LoadStatusView.model_validate(status.to_json()).dump()
        return web.json_response(body, status=200 if status.ok else 422)


async def _server_name(request: web.Request, response: web.StreamResponse) -> None:
    """Every response names the service, not the Python and aiohttp versions behind it."""
    response.headers["Server"] = "intent-router"


def create_app(holder: RuntimeHolder) -> web.Application:
    guard = host_guard(lambda: (holder.listening_host, holder.current.config.app.server.allowed_hosts))
    app = web.Application(middlewares=[guard, errors_middleware, body_middleware], client_max_size=MAX_BODY_BYTES)
    app[HOLDER] = holder
    app.on_response_prepare.append(_server_name)
    app[BODY_TIMEOUT] = lambda: holder.current.config.app.server.body_timeout
    app[OBSERVERS] = []
    install_start_gate(app)  # optional background starts wait for the first answer (before what uses it)
    h = Handlers(holder)
    app.router.add_post("/v1/query", h.query)
    app.router.add_post("/v1/test_routing", h.test_routing)
    app.router.add_get("/health", h.health)
    app.router.add_post("/admin/reload", h.reload)
    install_stats(app, holder, app[OBSERVERS])  # routing log, /v1/routing/statistics, /dashboard
    install_catalogue(app, holder)  # GET /v1/templates
    install_cluster(app, holder, app[OBSERVERS])  # GET /v1/cluster; reload announcements when cluster.enabled
    install_metrics(app, holder, app[OBSERVERS])  # GET /metrics (Prometheus)
    install_docs(app, lambda: holder.current.config.app.auth.enabled)  # GET /openapi.json, /docs
    install_mcp(app, holder, app[OBSERVERS])  # /mcp: MCP over streamable HTTP
    install_encoder_lanes(app, holder)  # the local encoder's lanes, once the server has answered
    install_background_tune(app, holder)  # tune.on_reload: re-tune a stale tuned encoder, then reload
    arm_start_gate(app)  # last: its fallback counts from the end of the other starts
    return app
