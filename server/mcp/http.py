"""`/mcp` on the running aiohttp server: streamable HTTP with the same keys and adapter scopes as the JSON API.

The key is checked here (401/403 as JSON, before the SDK sees the request); the caller's Principal
travels in the ASGI scope to the tools, and the SDK binds each MCP session to the key that opened it
(another key presenting that session id gets 404). The SDK's session manager runs in a task of its
own for the app's lifetime and is stopped when the server shuts down, which ends open event streams.

Stateful or stateless is decided once, at start (`mcp.transport`, mcp_settings.py): stateless whenever requests
may be spread over processes (cluster.enabled, `serve --workers N`). Stateful, a request that would open a
session is admitted by the session ledger first (sessions.py: per-key and process caps, idle sessions closed
to make room), and every request on a session is counted in flight while it runs.

Importing the MCP SDK cost about a third of a warm start's imports, so it is imported (in a thread) and
started in the background once the server has answered (the app's StartGate): /health and the JSON API
answer meanwhile, and a /mcp request that arrives before it is ready opens the gate and waits for it (or
gets 503 if it could not start).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..api.health import Health
from ..auth import Principal, Role, authenticate, presented_key, require
from ..runtime.holder import RuntimeHolder
from ..start_gate import START_GATE, StartGate
from .asgi_bridge import call_asgi
from .calls import PRINCIPAL_SCOPE_KEY, AnswerObserver
from .envelope import envelope_error, opens_session
from .sessions import ADMISSION, Figures, Refusal, SessionLedger

if TYPE_CHECKING:
    from .http_sdk import LedgeredSessionManager
    from .server import ToolsChangedNotifier

log = logging.getLogger("intent_router.mcp")

PATH = "/mcp"
SDK_MODULE = f"{__package__}.http_sdk"
SESSION_HEADER = "mcp-session-id"
REFUSAL_LOG_SECONDS = 60.0  # a refused session is logged at most this often per key (a flood logs one line)


class MCPEndpoint:
    def __init__(self, holder: RuntimeHolder, observers: list[AnswerObserver], gate: StartGate | None = None) -> None:
        self.holder = holder
        self.observers = observers
        self.gate = gate  # the SDK loads once it opens
        # several processes share the port (`serve --workers N`): the kernel spreads connections over them,
        # so a session could not follow its client and /mcp is stateless whatever mcp.transport says.
        # Set before the app starts.
        self.several_workers = False
        self.stateless: bool | None = None  # decided when the SDK starts (mcp_settings.py `stateless`)
        self.ledger = SessionLedger()
        self.manager: LedgeredSessionManager | None = None
        self.notifier: ToolsChangedNotifier | None = None
        self._sdk: Any = None  # server.mcp.http_sdk, once imported
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task | None = None
        self._refusal_logged: dict[str, float] = {}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        principal = authenticate(request, self.holder.current.config.app.auth)
        require(principal, Role.CLIENT)
        if self._ready is None:
            raise web.HTTPServiceUnavailable(reason="MCP is not started")
        if self.gate is not None:
            self.gate.open()  # an assistant is here: load the SDK now if the server has not answered yet
        try:
            await asyncio.shield(self._ready)  # at once, except in the first second or so after a start
        except Exception:
            raise web.HTTPServiceUnavailable(reason="MCP could not start") from None
        if self._running()["status"] != Health.OK:
            raise web.HTTPServiceUnavailable(reason="MCP stopped")
        assert self.manager is not None
        if request.method == "POST" and (refused := envelope_error(await request.read(), request.content_type)):
            return refused
        extra = {PRINCIPAL_SCOPE_KEY: principal, "user": self._sdk.user(principal, presented_key(request))}
        if not self.stateless:
            return await self._stateful(request, principal, extra)
        if request.method == "GET":  # the SDK would hold an event stream open that nothing is ever sent on
            message = "Method Not Allowed: /mcp is stateless, it sends nothing outside a request"
            response = _jsonrpc_error(405, message, code=-32600)
            response.headers["Allow"] = "POST"
            return response
        return await call_asgi(self.manager.handle_request, request, extra)

    async def _stateful(self, request: web.Request, principal: Principal, extra: dict[str, Any]) -> web.StreamResponse:
        assert self.manager is not None
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is not None:  # a request on a session: in flight while it runs (an event stream: while open)
            known = self.ledger.begin(session_id, principal.name)
            try:
                return await call_asgi(self.manager.handle_request, request, extra)
            finally:
                if known:
                    self.ledger.end(session_id)
        if request.method != "POST" or not opens_session(await request.read()):
            return await call_asgi(self.manager.handle_request, request, extra)  # no session: the SDK refuses it
        settings = self.holder.current.config.app.mcp
        self.manager.apply(settings)
        admission = self.ledger.admit(principal.name, settings.quota)
        if isinstance(admission, Refusal):
            self._log_refusal(principal.name, admission)
            return _jsonrpc_error(admission.status, admission.message)
        for idle in admission.closing:
            await self.manager.close(idle)
        token = ADMISSION.set(admission)  # the SDK registers the session it opens under this admission
        try:
            return await call_asgi(self.manager.handle_request, request, extra)
        finally:
            ADMISSION.reset(token)
            self.ledger.release(admission)

    def _log_refusal(self, key: str, refusal: Refusal) -> None:
        now = time.monotonic()
        if now - self._refusal_logged.get(key, -REFUSAL_LOG_SECONDS) >= REFUSAL_LOG_SECONDS:
            self._refusal_logged[key] = now
            log.warning("MCP session refused for key %r (%d): %s", key, refusal.status, refusal.message)

    def health(self) -> dict[str, Any]:
        """For /health: `starting` while the SDK loads, `ok` once /mcp answers, `down` with the reason
        when it could not start (assistants calling /mcp then get 503, so the replica is degraded), and
        `saturated` while the process holds `mcp.max_sessions` sessions (a new one closes an idle session of
        the key holding the most, or is refused with 503 when none is idle): degraded too, so it shows."""
        running = self._running()
        if running["status"] != Health.OK:
            return running
        if self.stateless:
            return {"status": Health.OK, "transport": "stateless"}
        figures = self.ledger.figures(self.holder.current.config.app.mcp.quota)
        body: dict[str, Any] = {"status": Health.OK, "transport": "stateful", "sessions": _session_figures(figures)}
        if figures.saturated:
            body["status"] = Health.SATURATED
            body["reason"] = (
                f"{figures.open} of {figures.quota.total} MCP sessions open (mcp.max_sessions): a new one closes an "
                "idle session of the key holding the most, or gets 503 when none is idle"
            )
        return body

    def _running(self) -> dict[str, str]:
        """`starting`, `ok`, or `down` with the reason: whether /mcp can answer at all."""
        ready = self._ready
        if ready is None or not ready.done():
            return {"status": Health.STARTING}
        if ready.cancelled() or ready.exception() is not None:
            exc = None if ready.cancelled() else ready.exception()
            return {"status": Health.DOWN, "reason": f"could not start ({type(exc).__name__ if exc else 'cancelled'})"}
        if self._task is not None and self._task.done() and not self._stop.is_set():
            return {"status": Health.DOWN, "reason": "the session manager stopped"}
        return {"status": Health.OK}

    async def start(self) -> None:
        """Import the SDK and start the session manager in the background once the gate opens (returns at once)."""
        loop = asyncio.get_running_loop()
        self._ready = ready = loop.create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # a failure is logged, not "never retrieved"
        self._task = loop.create_task(self._run(ready), name="mcp-session-manager")

    async def _run(self, ready: asyncio.Future[None]) -> None:
        try:
            if self.gate is not None:
                await self._gate_or_stop(self.gate)
            sdk = None if self._stop.is_set() else await asyncio.to_thread(importlib.import_module, SDK_MODULE)
            if sdk is None or self._stop.is_set():  # the server stopped before the SDK had loaded: nothing failed
                ready.set_exception(RuntimeError("MCP stopped while starting"))
                return
            self._sdk = sdk
            app = self.holder.current.config.app
            self.stateless = app.mcp.stateless(app.cluster.enabled, self.several_workers)
            if self.several_workers and app.mcp.transport == "stateful":
                log.warning("mcp.transport stateful is impossible with several workers on one port: /mcp is stateless")
            self.manager, self.notifier = sdk.session_manager(self.holder, self.observers, self.stateless, self.ledger)
            async with self.manager.run():
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("MCP start cancelled"))
                if not isinstance(exc, asyncio.CancelledError):
                    log.error("MCP over HTTP could not start: %s", exc)
            raise

    async def _gate_or_stop(self, gate: StartGate) -> None:
        """Wait for the gate, unless the server stops first (then nothing is loaded)."""
        waits = [asyncio.ensure_future(gate.wait()), asyncio.ensure_future(self._stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            task, self._task = self._task, None
            if task.done():  # ended on its own (a failure is reported where it happened)
                if not task.cancelled():
                    task.exception()
                self._unlisten()
                return
            try:
                await asyncio.wait_for(task, 5.0)
            except TimeoutError:
                log.warning("MCP session manager did not stop in 5 s")
            except Exception:
                pass  # reported when it failed
        self._unlisten()

    def _unlisten(self) -> None:
        if self.notifier is not None and self.notifier.on_load in self.holder.load_listeners:
            self.holder.load_listeners.remove(self.notifier.on_load)


def _session_figures(figures: Figures) -> dict[str, Any]:
    """The ledger's figures as /health shows them (how many per key is for /metrics, behind the stats key)."""
    return {
        "open": figures.open,
        "idle": figures.idle,
        "max_sessions": figures.quota.total,
        "max_sessions_per_key": figures.quota.per_owner,
        "keys_at_cap": figures.keys_at_cap,
        "opened": figures.opened,
        "refused": figures.refused,
        "closed_for_room": figures.closed_for_room,
    }


def _jsonrpc_error(status: int, message: str, code: int = -32603) -> web.Response:
    """A refusal in the shape of the SDK's own (a JSON-RPC error without an id), with the HTTP status."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return web.json_response(body, status=status)


MCP = web.AppKey("mcp", MCPEndpoint)


def install_mcp(app: web.Application, holder: RuntimeHolder, observers: list[AnswerObserver]) -> MCPEndpoint:
    """`GET/POST/DELETE /mcp`, started with the app and stopped at shutdown (call before it starts)."""
    endpoint = MCPEndpoint(holder, observers, app.get(START_GATE))
    app[MCP] = endpoint

    async def lifecycle(_: web.Application) -> AsyncIterator[None]:
        await endpoint.start()
        yield
        await endpoint.stop()  # usually already stopped at shutdown

    async def on_shutdown(_: web.Application) -> None:
        await endpoint.stop()  # before aiohttp waits for open handlers: ends the event streams

    app.cleanup_ctx.append(lifecycle)
    app.on_shutdown.append(on_shutdown)
    for method in ("GET", "POST", "DELETE"):
        app.router.add_route(method, PATH, endpoint.handle)
    return endpoint
