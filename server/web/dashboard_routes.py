"""`/v1/routing/statistics` and the `/dashboard` page: login, logout and its static assets."""

from __future__ import annotations

import html
import logging
from pathlib import Path

from aiohttp import web

from ..api.requests import ForgetQuestionsRequest, StatisticsQuery
from ..api.responses import ForgetQuestionsResponse
from ..auth import Principal, Role, require
from ..bulkhead import STATISTICS_POOL, run_on
from ..errors import IntentRouterError, Unauthorized
from ..runtime.holder import RuntimeHolder
from ..service.observers import AnswerObserver
from .dashboard_auth import COOKIE, DashboardSessions
from .login_guard import LoginRateLimit, check_same_origin
from .query_string import parse_body, parse_query_string
from .redirects import see_other
from .request_body import read_form, read_json
from .routing_log import STATS_LOG, install_routing_log
from .statistics import statistics_body

log = logging.getLogger("intent_router.stats")

DASHBOARD_DIR = Path(__file__).parent / "dashboard"
ASSETS = {"dashboard.css": "text/css", "dashboard.js": "text/javascript", "favicon.svg": "image/svg+xml"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # own forms then carry Origin (login_guard.py)
    "Cache-Control": "no-store",
}
SIGN_OUT_SLOT = "<!--sign-out-->"  # in index.html: the sign-out form, shown to a signed-in session only
SIGN_OUT_FORM = (
    '<form method="post" action="/dashboard/logout" class="logout" id="sign-out">'
    '<button type="submit">Sign out</button></form>'
)


class DashboardRoutes:
    def __init__(self, app: web.Application, holder: RuntimeHolder) -> None:
        self.app = app
        self.holder = holder
        self.sessions = DashboardSessions()
        self.login_limit = LoginRateLimit()

    def principal(self, request: web.Request) -> Principal:
        return self.sessions.principal(request, self.holder.current.config.app.auth)

    async def statistics(self, request: web.Request) -> web.Response:
        require(self.principal(request), Role.STATS)
        params = parse_query_string(StatisticsQuery, request.query)
        body = await statistics_body(self.holder, self.app.get(STATS_LOG), params)
        return web.json_response(body.dump())

    async def forget_questions(self, request: web.Request) -> web.Response:
        """The dashboard's Dismiss and Clear list: forget these unmatched questions' text (stats/forget.py)."""
        require(self.principal(request), Role.STATS)
        check_same_origin(request)  # a page of another site must not clear the list with the session cookie
        asked = parse_body(ForgetQuestionsRequest, await read_json(request))
        forgotten = 0
        rlog = self.app.get(STATS_LOG)
        if rlog is not None:
            from ..stats.forget import forget_questions  # SQLAlchemy: loaded by the log, not at import

            await rlog.ready()
            try:
                forgotten = await run_on(
                    STATISTICS_POOL, forget_questions, rlog.engine, rlog.table, rlog.rollups.unmatched, asked.questions
                )
            except Exception as exc:
                log.warning("forgetting unmatched questions failed: %s: %s", type(exc).__name__, exc)
                raise IntentRouterError(
                    "the routing log database cannot be written", code="stats_unavailable", status=503
                ) from None
        return web.json_response(ForgetQuestionsResponse(forgotten=forgotten).dump())

    async def dashboard(self, request: web.Request) -> web.Response:
        auth = self.holder.current.config.app.auth
        try:
            require(self.principal(request), Role.STATS)
        except Unauthorized:
            raise see_other("/dashboard/login") from None
        except IntentRouterError as exc:
            return self._login_page(exc.status, exc.message)
        signed_in = auth.enabled and self.sessions.session(request, auth) is not None
        return _html(_read("index.html").replace(SIGN_OUT_SLOT, SIGN_OUT_FORM if signed_in else ""))

    async def login_form(self, request: web.Request) -> web.Response:
        return self._login_page(200)

    async def login(self, request: web.Request) -> web.Response:
        check_same_origin(request)
        self.login_limit.check(request.remote or "")
        form = await read_form(request)
        key = form.get("key", "").strip()
        auth = self.holder.current.config.app.auth
        if not auth.enabled:
            raise see_other("/dashboard")
        try:
            redirect = self.sessions.login(key, auth, secure=request.secure)
        except IntentRouterError:
            return self._login_page(401, "That key is not an admin or statistics key.")
        raise redirect

    async def logout(self, request: web.Request) -> web.Response:
        check_same_origin(request)
        response = see_other("/dashboard")
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
        response = _html(text, status)
        if status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="intent-router"'
        return response


def _read_bytes(name: str) -> bytes:
    return (DASHBOARD_DIR / name).read_bytes()


def _read(name: str) -> str:
    return _read_bytes(name).decode("utf-8")


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8", headers=SECURITY_HEADERS)


def install_stats(app: web.Application, holder: RuntimeHolder, observers: list[AnswerObserver]) -> DashboardRoutes:
    """Wire the routing log and the statistics/dashboard routes into `app` (call before it starts)."""
    install_routing_log(app, holder, observers)
    routes = DashboardRoutes(app, holder)
    app.router.add_get("/v1/routing/statistics", routes.statistics)
    app.router.add_post("/v1/routing/unmatched/forget", routes.forget_questions)
    app.router.add_get("/dashboard", routes.dashboard)
    app.router.add_get("/dashboard/login", routes.login_form)
    app.router.add_post("/dashboard/login", routes.login)
    app.router.add_post("/dashboard/logout", routes.logout)
    app.router.add_get("/dashboard/assets/{name}", routes.asset)
    return routes
