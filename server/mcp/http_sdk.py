"""The MCP SDK's side of `/mcp` (imported in the background once the server runs: see http.py).

The SDK and its protocol models take a large share of a server's start to import, so nothing on the
way to the first /health imports this module. It is also the one place that reaches into the session
manager's private hooks (`_admit_session`, `_discard_session`, `_server_instances` of mcp 2.3.0, pinned in
requirements.txt), to keep the session ledger (sessions.py) in step with the sessions the SDK holds.
"""

from __future__ import annotations

import hashlib
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from ..auth import Principal
from ..mcp_settings import MCPSettings
from ..runtime.holder import RuntimeHolder
from .calls import AnswerObserver
from .server import ToolsChangedNotifier, build_server
from .sessions import ADMISSION, SessionLedger


def user(principal: Principal, key: str | None) -> AuthenticatedUser:
    """Who opened a session, as the SDK compares it: the key's name plus a hash of the key itself."""
    digest = hashlib.sha256((key or "").encode()).hexdigest()[:16]
    token = AccessToken(
        token=digest, client_id=f"{principal.name}:{digest}", scopes=[principal.role], subject=principal.name
    )
    return AuthenticatedUser(token)


class LedgeredSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, telling the ledger when it registers a session and when it forgets one."""

    def __init__(self, server: Server, ledger: SessionLedger, **options: Any) -> None:
        super().__init__(server, **options)
        self.ledger = ledger

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            owner = (requestor["subject"] if requestor is not None else None) or "anonymous"
            self.ledger.registered(transport.mcp_session_id, ADMISSION.get(), owner)
        return transport

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        self.ledger.closed(session_id)
        await super()._discard_session(session_id, transport)

    def apply(self, settings: MCPSettings) -> None:
        """The current config's limits, for the sessions opened from now on (a reload changes them)."""
        self.session_idle_timeout = settings.idle_timeout_seconds
        self.max_sessions = settings.max_sessions  # the ledger decides first; this is the SDK's own backstop

    async def close(self, session_id: str) -> None:
        """End a session as a DELETE would (its id answers 404 from now on)."""
        transport = self._server_instances.get(session_id)
        if transport is not None:
            await self._discard_session(session_id, transport)


def session_manager(
    holder: RuntimeHolder,
    observers: list[AnswerObserver],
    stateless: bool,
    ledger: SessionLedger,
) -> tuple[LedgeredSessionManager, ToolsChangedNotifier]:
    """The MCP server over `holder` behind the SDK's streamable-HTTP session manager, and its notifier. The
    SDK's own Host/Origin check stays off: web/host_guard.py applies the one rule to every route, /mcp too."""
    server, notifier = build_server(holder, None, observers)
    settings = holder.current.config.app.mcp
    manager = LedgeredSessionManager(
        server,
        ledger,
        stateless=stateless,
        security_settings=None,
        session_idle_timeout=settings.idle_timeout_seconds,
        max_sessions=settings.max_sessions,
    )
    return manager, notifier
