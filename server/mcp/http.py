"""`/mcp` on the running aiohttp server: streamable HTTP with the same keys and adapter scopes as the JSON API.

The key is checked here (401/403 as JSON, before the SDK sees the request); the caller's Principal
travels in the ASGI scope to the tools, and the SDK binds each MCP session to the key that opened it
(another key presenting that session id gets 404). The SDK's session manager runs in a task of its
own for the app's lifetime and is stopped when the server shuts down, which ends open event streams.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from ..auth import Principal, authenticate, is_loopback, presented_key, require
from ..runtime.holder import RuntimeHolder
from .asgi_bridge import call_asgi
from .calls import Hook
from .server import PRINCIPAL_SCOPE_KEY, build_server

log = logging.getLogger("intent_router.mcp")

PATH = "/mcp"


def _loopback_only() -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback server (the SDK's own default for 127.0.0.1)."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def _user(principal: Principal, key: str | None) -> AuthenticatedUser:
    """Who opened a session, as the SDK compares it: the key's name plus a hash of the key itself."""
    digest = hashlib.sha256((key or "").encode()).hexdigest()[:16]
    token = AccessToken(token=digest, client_id=f"{principal.name}:{digest}", scopes=[principal.role])
    return AuthenticatedUser(token)


class MCPEndpoint:
    def __init__(self, holder: RuntimeHolder, hooks: list[Hook]) -> None:
        self.holder = holder
        self.server, self.notifier = build_server(holder, None, hooks)
        # Stateless: every request stands alone (no MCP session id, no server-sent notifications). Needed when
        # several processes share the port (`serve --workers N`): a session lives in one process, and the
        # kernel spreads connections over the processes. Set before the app starts.
        self.stateless = False
        self.manager: StreamableHTTPSessionManager | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    def _manager(self) -> StreamableHTTPSessionManager:
        host = self.holder.current.config.app.server.host
        return StreamableHTTPSessionManager(
            self.server,
            stateless=self.stateless,
            security_settings=_loopback_only() if is_loopback(host) else None,
        )

    async def handle(self, request: web.Request) -> web.StreamResponse:
        principal = authenticate(request, self.holder.current.config.app.auth)
        require(principal, "client")
        if self.manager is None:
            raise web.HTTPServiceUnavailable(reason="MCP is not started")
        extra = {PRINCIPAL_SCOPE_KEY: principal, "user": _user(principal, presented_key(request))}
        return await call_asgi(self.manager.handle_request, request, extra)

    async def start(self) -> None:
        ready = asyncio.Event()
        manager = self.manager = self._manager()

        async def run() -> None:
            async with manager.run():
                ready.set()
                await self._stop.wait()

        self._task = asyncio.get_running_loop().create_task(run(), name="mcp-session-manager")
        done, _ = await asyncio.wait([self._task, asyncio.ensure_future(ready.wait())], return_when="FIRST_COMPLETED")
        if self._task in done:
            self._task.result()  # raise what stopped it

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            task, self._task = self._task, None
            try:
                await asyncio.wait_for(task, 5.0)
            except TimeoutError:
                log.warning("MCP session manager did not stop in 5 s")
        if self.notifier.on_load in self.holder.load_listeners:
            self.holder.load_listeners.remove(self.notifier.on_load)


MCP = web.AppKey("mcp", MCPEndpoint)


def install_mcp(app: web.Application, holder: RuntimeHolder, hooks: list[Hook]) -> MCPEndpoint:
    """`GET/POST/DELETE /mcp`, started with the app and stopped at shutdown (call before it starts)."""
    endpoint = MCPEndpoint(holder, hooks)
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
