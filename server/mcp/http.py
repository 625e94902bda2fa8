"""`/mcp` on the running aiohttp server: streamable HTTP with the same keys and adapter scopes as the JSON API.

The key is checked here (401/403 as JSON, before the SDK sees the request); the caller's Principal
travels in the ASGI scope to the tools, and the SDK binds each MCP session to the key that opened it
(another key presenting that session id gets 404). The SDK's session manager runs in a task of its
own for the app's lifetime and is stopped when the server shuts down, which ends open event streams.

Importing the MCP SDK cost about a third of a warm start's imports, so it is imported (in a thread) and
started in the background once the server has answered (the app's StartGate): /health and the JSON API
answer meanwhile, and a /mcp request that arrives before it is ready opens the gate and waits for it (or
gets 503 if it could not start).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ..auth import authenticate, is_loopback, presented_key, require
from ..runtime.holder import RuntimeHolder
from ..runtime.start_gate import START_GATE, StartGate
from .asgi_bridge import call_asgi
from .calls import PRINCIPAL_SCOPE_KEY, Hook
from .envelope import envelope_error

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from .server import ToolsChangedNotifier

log = logging.getLogger("intent_router.mcp")

PATH = "/mcp"
SDK_MODULE = f"{__package__}.http_sdk"


class MCPEndpoint:
    def __init__(self, holder: RuntimeHolder, hooks: list[Hook], gate: StartGate | None = None) -> None:
        self.holder = holder
        self.hooks = hooks
        self.gate = gate  # the SDK loads once it opens
        # Stateless: every request stands alone (no MCP session id, no server-sent notifications). Needed when
        # several processes share the port (`serve --workers N`): a session lives in one process, and the
        # kernel spreads connections over the processes. Set before the app starts.
        self.stateless = False
        self.manager: StreamableHTTPSessionManager | None = None
        self.notifier: ToolsChangedNotifier | None = None
        self._sdk: Any = None  # server.mcp.http_sdk, once imported
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        principal = authenticate(request, self.holder.current.config.app.auth)
        require(principal, "client")
        if self._ready is None:
            raise web.HTTPServiceUnavailable(reason="MCP is not started")
        if self.gate is not None:
            self.gate.open()  # an assistant is here: load the SDK now if the server has not answered yet
        try:
            await asyncio.shield(self._ready)  # at once, except in the first second or so after a start
        except Exception:
            raise web.HTTPServiceUnavailable(reason="MCP could not start") from None
        if self.health()["status"] != "ok":
            raise web.HTTPServiceUnavailable(reason="MCP stopped")
        assert self.manager is not None
        if request.method == "POST" and (refused := envelope_error(await request.read(), request.content_type)):
            return refused
        extra = {PRINCIPAL_SCOPE_KEY: principal, "user": self._sdk.user(principal, presented_key(request))}
        return await call_asgi(self.manager.handle_request, request, extra)

    def health(self) -> dict[str, str]:
        """For /health: `starting` while the SDK loads, `ok` once /mcp answers, `down` with the reason
        when it could not start (assistants calling /mcp then get 503, so the replica is degraded)."""
        ready = self._ready
        if ready is None or not ready.done():
            return {"status": "starting"}
        if ready.cancelled() or ready.exception() is not None:
            exc = None if ready.cancelled() else ready.exception()
            return {"status": "down", "reason": f"could not start ({type(exc).__name__ if exc else 'cancelled'})"}
        if self._task is not None and self._task.done() and not self._stop.is_set():
            return {"status": "down", "reason": "the session manager stopped"}
        return {"status": "ok"}

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
            loopback = is_loopback(self.holder.current.config.app.server.host)
            self.manager, self.notifier = sdk.session_manager(self.holder, self.hooks, self.stateless, loopback)
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


MCP = web.AppKey("mcp", MCPEndpoint)


def install_mcp(app: web.Application, holder: RuntimeHolder, hooks: list[Hook]) -> MCPEndpoint:
    """`GET/POST/DELETE /mcp`, started with the app and stopped at shutdown (call before it starts)."""
    endpoint = MCPEndpoint(holder, hooks, app.get(START_GATE))
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
