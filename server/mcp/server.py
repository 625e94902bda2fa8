"""The MCP server object (SDK low-level `Server`) and the tools/list_changed notifier.

One `Server` serves every connection. Who is calling comes from the connection: over HTTP the
aiohttp handler authenticates the key and puts the Principal into the request scope; over stdio
the local user who launched the command is the admin. Tool lists are computed per call from the
current config and the caller's scope.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.connection import Connection
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession

from ..auth import Principal
from ..errors import Unauthorized
from ..runtime.holder import LoadStatus, RuntimeHolder
from .calls import PRINCIPAL_SCOPE_KEY, AnswerObserver
from .tools import call_tool, tool_list

log = logging.getLogger("intent_router.mcp")

SERVER_NAME = "intent-router"


class ToolsChangedNotifier:
    """Remembers live MCP connections and tells each one when a reload changed the tools.

    A connection is remembered the first time it lists or calls tools and forgotten when it closes
    (through its own exit stack, the SDK's per-connection teardown hook)."""

    def __init__(self) -> None:
        self.connections: set[Connection] = set()
        self._tasks: set[asyncio.Task] = set()
        self.sent = 0

    def seen(self, session: ServerSession) -> None:
        # the lowlevel request context exposes the per-request session only; its connection is the
        # long-lived object with the standalone channel that list_changed travels on
        connection = getattr(session, "_connection", None)
        if not isinstance(connection, Connection) or connection in self.connections:
            return
        self.connections.add(connection)
        connection.exit_stack.callback(self.connections.discard, connection)

    def on_load(self, status: LoadStatus) -> None:
        if not status.ok or status.changes.get("unchanged"):
            return
        for connection in list(self.connections):
            task = asyncio.get_running_loop().create_task(self._send(connection))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, connection: Connection) -> None:
        try:
            await connection.send_tool_list_changed()
            self.sent += 1
        except Exception as exc:  # a connection closing underneath: forget it
            log.debug("tools/list_changed not delivered: %s", exc)
            self.connections.discard(connection)


class _IntentRouterServer(Server[Any]):
    """Advertises `tools.listChanged` on every transport (the HTTP session manager builds its
    initialization options without arguments)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


def principal_of(ctx: ServerRequestContext[Any], default: Principal | None) -> Principal:
    scope = getattr(ctx.request, "scope", None)
    found = scope.get(PRINCIPAL_SCOPE_KEY) if isinstance(scope, dict) else None
    if isinstance(found, Principal):
        return found
    if default is not None:
        return default
    raise Unauthorized("an API key is required")


def build_server(
    holder: RuntimeHolder,
    default_principal: Principal | None = None,
    observers: Sequence[AnswerObserver] = (),
) -> tuple[Server[Any], ToolsChangedNotifier]:
    """The MCP server over `holder`, and its notifier (registered as a load listener of the holder)."""
    notifier = ToolsChangedNotifier()
    holder.load_listeners.append(notifier.on_load)

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None):
        notifier.seen(ctx.session)
        return types.ListToolsResult(tools=tool_list(holder, principal_of(ctx, default_principal)))

    async def call(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams):
        notifier.seen(ctx.session)
        principal = principal_of(ctx, default_principal)
        return await call_tool(holder, principal, params.name, params.arguments, observers)

    server = _IntentRouterServer(
        SERVER_NAME,
        version="1",
        instructions="Answers questions from the configured data sources; see the `ask` tool's description.",
        on_list_tools=list_tools,
        on_call_tool=call,
    )
    return server, notifier
