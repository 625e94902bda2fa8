"""Routing log wiring, `GET /v1/routing/statistics` and the `/dashboard` page.

`install_stats(app, holder)` adds a hook (successful decisions), an inner middleware (decisions that
end in a 5xx error or a timeout), the routes, and starts/stops the log with the app.

Dashboard auth: with auth on, `/dashboard` redirects to a small login form. The form posts the
admin or stats key once; the server replies with an HttpOnly, SameSite=Strict session cookie (an
HMAC over role and expiry with a per-process secret, 12 h), so the key never sits in a URL, in
browser history or in the page's JavaScript. API clients send the key as usual (Bearer / X-API-Key).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import hmac
import html
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from ..errors import BadRequest, IntentRouterError, Unauthorized
from ..runtime.holder import RuntimeHolder
from ..stats import RoutingLog
from ..stats.aggregates import Window, compute
from ..stats.capture import record_error, record_for
from ..stats.window import parse_since
from .auth import Principal, authenticate, require

log = logging.getLogger("intent_router.stats")

STATS_LOG = web.AppKey("stats_log", RoutingLog)
DASHBOARD_DIR = Path(__file__).parent / "dashboard"
ASSETS = {"dashboard.css": "text/css", "dashboard.js": "text/javascript", "favicon.svg": "image/svg+xml"}
COOKIE = "ir_dashboard"
SESSION_SECONDS = 12 * 3600
LOGGED_PATHS = {"/v1/query": "query", "/v1/test_routing": "test_routing"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class _InFlight:
    """Per request: when it started and whether the success hook already logged it."""

    started: float
    logged: bool = False


_IN_FLIGHT: contextvars.ContextVar[_InFlight | None] = contextvars.ContextVar("routing_in_flight", default=None)


def _elapsed_ms(state: _InFlight | None) -> float | None:
    return None if state is None else round((time.perf_counter() - state.started) * 1000, 3)


class StatsRoutes:
    def __init__(self, app: web.Application, holder: RuntimeHolder) -> None:
        self.app = app
        self.holder = holder
        self._secret = secrets.token_bytes(32)

    @property
    def routing_log(self) -> RoutingLog | None:
        return self.app.get(STATS_LOG)

    # --- capture ------------------------------------------------------------------------------
    def hook(self, kind: str, adapter, question: str, result: Any) -> None:
        state = _IN_FLIGHT.get()
        rlog = self.routing_log
        if rlog is None:
            return
        entry = record_for(kind, adapter, question, result, _elapsed_ms(state))
        if entry is not None:
            rlog.record(entry)
            if state is not None:
                state.logged = True

    @web.middleware
    async def middleware(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
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
            adapter = body.get("adapter") or _default_adapter_name(self.holder)
        except Exception:
            pass
        rlog = self.routing_log
        if rlog is not None:
            rlog.record(record_error(kind, adapter, question, exc, _elapsed_ms(state)))

    # --- auth ---------------------------------------------------------------------------------
    def _sign(self, role: str, expires: int) -> str:
        mac = hmac.new(self._secret, f"{role}.{expires}".encode(), hashlib.sha256).hexdigest()
        return f"{role}.{expires}.{mac}"

    def _session(self, request: web.Request) -> Principal | None:
        value = request.cookies.get(COOKIE)
        if not value or value.count(".") != 2:
            return None
        role, expires, _ = value.split(".")
        if role not in ("admin", "stats") or not expires.isdigit() or int(expires) < time.time():
            return None
        if not hmac.compare_digest(value, self._sign(role, int(expires))):
            return None
        return Principal("dashboard", role, ())

    def principal(self, request: web.Request) -> Principal:
        session = self._session(request)
        if session is not None:
            return session
        return authenticate(request, self.holder.current.config.app.auth)

    # --- handlers -----------------------------------------------------------------------------
    async def statistics(self, request: web.Request) -> web.Response:
        require(self.principal(request), "stats")
        runtime = self.holder.current
        asked = request.query.get("adapter") or None
        name = asked or _default_adapter_name(self.holder)
        adapter = runtime.get(name)
        body: dict[str, Any] = dict(adapter.describe())
        body["adapter"] = name
        now = time.time()
        kind = request.query.get("kind") or None
        if kind in ("all",):
            kind = None
        if kind not in (None, "query", "test_routing"):
            raise BadRequest("kind: one of query, test_routing, all")
        rlog = self.routing_log
        settings = runtime.config.app.stats
        if rlog is None:
            body["routing_log"] = {"enabled": False}
        else:
            window = Window(parse_since(request.query.get("since"), now), now, asked, kind)
            try:
                figures = await asyncio.to_thread(
                    compute, rlog.engine, rlog.table, window, rlog.settings.max_window_rows
                )
            except Exception as exc:
                log.warning("routing log query failed: %s: %s", type(exc).__name__, exc)
                raise IntentRouterError(
                    "the routing log database cannot be read", code="stats_unavailable", status=503
                ) from None
            threshold = _threshold(adapter)
            if threshold is not None:
                figures["score_histogram"]["threshold"] = threshold
            figures["enabled"] = True
            figures["store_queries"] = rlog.settings.store_queries
            figures["log"] = rlog.status()
            body["routing_log"] = figures
        body["adapters"] = [{"name": a.name, "type": a.type_name} for a in runtime.adapters.values()]
        body["config_status"] = {
            "config_file": str(runtime.config.config_file),
            "last_load": self.holder.last_load.to_json() if self.holder.last_load else None,
            "last_good_load": self.holder.last_good_load.to_json() if self.holder.last_good_load else None,
            "stats_settings": settings.model_dump(exclude={"url"}),
        }
        body["generated_at"] = now
        return web.json_response(body)

    async def dashboard(self, request: web.Request) -> web.Response:
        try:
            require(self.principal(request), "stats")
        except Unauthorized:
            raise web.HTTPSeeOther("/dashboard/login") from None
        except IntentRouterError as exc:
            return self._login_page(exc.status, exc.message)
        return _html(_read("index.html"))

    async def login_form(self, request: web.Request) -> web.Response:
        return self._login_page(200)

    async def login(self, request: web.Request) -> web.Response:
        form = await request.post()
        key = str(form.get("key", "")).strip()
        auth = self.holder.current.config.app.auth
        if not auth.enabled:
            raise web.HTTPSeeOther("/dashboard")
        try:
            principal = authenticate(_KeyOnly(key), auth)  # type: ignore[arg-type]
            require(principal, "stats")
        except IntentRouterError:
            return self._login_page(401, "That key is not an admin or statistics key.")
        expires = int(time.time()) + SESSION_SECONDS
        response = web.HTTPSeeOther("/dashboard")
        response.set_cookie(
            COOKIE,
            self._sign(principal.role, expires),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="Strict",
            secure=request.secure,
            path="/",
        )
        raise response

    async def logout(self, request: web.Request) -> web.Response:
        response = web.HTTPSeeOther("/dashboard")
        response.del_cookie(COOKIE, path="/")
        raise response

    async def asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ASSETS:
            raise web.HTTPNotFound()
        return web.Response(
            body=_read_bytes(name),
            content_type=ASSETS[name],
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    def _login_page(self, status: int, message: str = "") -> web.Response:
        text = _read("login.html").replace("{{message}}", html.escape(message))
        return _html(text, status)

    # --- lifecycle ----------------------------------------------------------------------------
    async def on_startup(self, app: web.Application) -> None:
        runtime = self.holder.current
        settings = runtime.config.app.stats
        if not settings.enabled:
            return
        rlog = RoutingLog(settings, runtime.config.root)
        await rlog.start()
        app[STATS_LOG] = rlog

    async def on_cleanup(self, app: web.Application) -> None:
        rlog = app.get(STATS_LOG)
        if rlog is not None:
            await rlog.close()


class _KeyOnly:
    """What `authenticate` reads of a request (its headers), for a key typed into the login form."""

    def __init__(self, key: str) -> None:
        self.headers = CIMultiDictProxy(CIMultiDict({"Authorization": f"Bearer {key}"}))


def _default_adapter_name(holder: RuntimeHolder) -> str:
    from .app import default_adapter  # app.py imports this module: resolve at call time

    return default_adapter(holder.current)


def _threshold(adapter) -> float | None:
    try:
        return adapter.routing_policy().confidence_threshold
    except Exception:
        return None


def _read_bytes(name: str) -> bytes:
    return (DASHBOARD_DIR / name).read_bytes()


def _read(name: str) -> str:
    return _read_bytes(name).decode("utf-8")


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8", headers=SECURITY_HEADERS)


def install_stats(app: web.Application, holder: RuntimeHolder, hooks: list) -> StatsRoutes:
    """Wire the routing log and the statistics/dashboard routes into `app` (call before it starts)."""
    routes = StatsRoutes(app, holder)
    hooks.append(routes.hook)
    app.middlewares.append(routes.middleware)
    app.router.add_get("/v1/routing/statistics", routes.statistics)
    app.router.add_get("/dashboard", routes.dashboard)
    app.router.add_get("/dashboard/login", routes.login_form)
    app.router.add_post("/dashboard/login", routes.login)
    app.router.add_post("/dashboard/logout", routes.logout)
    app.router.add_get("/dashboard/assets/{name}", routes.asset)
    app.on_startup.append(routes.on_startup)
    app.on_cleanup.append(routes.on_cleanup)
    return routes
