"""The MCP SDK's side of `/mcp` (imported in the background once the server runs: see http.py).

The SDK and its protocol models take a large share of a server's start to import, so nothing on the
way to the first /health imports this module.
"""

from __future__ import annotations

import hashlib

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from ..auth import Principal
from ..runtime.holder import RuntimeHolder
from .calls import Hook
from .server import ToolsChangedNotifier, build_server


def _loopback_only() -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback server (the SDK's own default for 127.0.0.1)."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def user(principal: Principal, key: str | None) -> AuthenticatedUser:
    """Who opened a session, as the SDK compares it: the key's name plus a hash of the key itself."""
    digest = hashlib.sha256((key or "").encode()).hexdigest()[:16]
    token = AccessToken(token=digest, client_id=f"{principal.name}:{digest}", scopes=[principal.role])
    return AuthenticatedUser(token)


def session_manager(
    holder: RuntimeHolder, hooks: list[Hook], stateless: bool, loopback: bool
) -> tuple[StreamableHTTPSessionManager, ToolsChangedNotifier]:
    """The MCP server over `holder` behind the SDK's streamable-HTTP session manager, and its notifier."""
    server, notifier = build_server(holder, None, hooks)
    manager = StreamableHTTPSessionManager(
        server, stateless=stateless, security_settings=_loopback_only() if loopback else None
    )
    return manager, notifier
