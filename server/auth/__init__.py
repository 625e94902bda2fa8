"""API keys from the environment: client keys (optionally limited to adapters), an admin key, a stats key."""

from __future__ import annotations

import hmac
import ipaddress
import os
from dataclasses import dataclass
from enum import StrEnum

from aiohttp import web

from ..errors import Forbidden, Unauthorized
from .settings import AuthSettings


class Role(StrEnum):
    """What a key may do (auth.client_keys, admin_key_env, stats_key_env)."""

    CLIENT = "client"  # ask questions of its adapters (/v1/query, /v1/test_routing, /v1/templates, /mcp)
    ADMIN = "admin"  # everything, including /admin/reload and /v1/cluster
    STATS = "stats"  # read-only: statistics, metrics and the dashboard


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    adapters: tuple[str, ...] | None = None  # None = every adapter

    def may_query(self, adapter: str) -> bool:
        return self.role == Role.ADMIN or self.adapters is None or adapter in self.adapters

    def may_see(self, adapter: str) -> bool:
        """In status output (/health): the adapters it may query; the stats key sees them all, as its
        statistics name them all."""
        return self.role == Role.STATS or self.may_query(adapter)


ANONYMOUS_ADMIN = Principal("anonymous", Role.ADMIN)  # auth off: loopback-only server, full access


def presented_key(request: web.Request) -> str | None:
    """The key the request presents, or None. An Authorization header that is not `Bearer <key>`, or two
    headers naming different keys, is a 401: a request is judged by every credential it carries, never by
    the one that happens to work."""
    header = request.headers.get("Authorization")
    api_key = request.headers.get("X-API-Key") or None
    if header is None:
        return api_key
    scheme, _, bearer = header.strip().partition(" ")
    key = bearer.strip()
    if scheme.lower() != "bearer" or not key:
        raise Unauthorized("the Authorization header must be Bearer <key>")
    if api_key is not None and not _same(key, api_key):
        raise Unauthorized("Authorization and X-API-Key present different keys")
    return key


def _same(a: str, b: str) -> bool:
    # header values, form fields and environment variables carry bytes that are not UTF-8 as lone surrogates
    # (a plain encode() raised on them: a 500); encoded with them kept, equal texts give equal bytes
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))


def _matches(key: str, env_name: str | None) -> bool:
    expected = os.environ.get(env_name or "") if env_name else None
    return bool(expected) and _same(key, expected)  # type: ignore[arg-type]


def authenticate(request: web.Request, auth: AuthSettings) -> Principal:
    if not auth.enabled:
        return ANONYMOUS_ADMIN
    key = presented_key(request)
    if key is None:
        raise Unauthorized("an API key is required (Authorization: Bearer <key> or X-API-Key)")
    if _matches(key, auth.admin_key_env):
        return Principal("admin", Role.ADMIN)
    if _matches(key, auth.stats_key_env):
        return Principal("stats", Role.STATS, ())
    for client in auth.client_keys:
        if _matches(key, client.key_env):
            return Principal(client.name, Role.CLIENT, tuple(client.adapters) if client.adapters is not None else None)
    raise Unauthorized("invalid API key")


def require(principal: Principal, *roles: Role) -> None:
    if principal.role not in roles and principal.role != Role.ADMIN:
        raise Forbidden(f"this endpoint needs a {' or '.join(roles)} key")


def missing_key_envs(auth: AuthSettings) -> list[str]:
    names = [c.key_env for c in auth.client_keys] + [n for n in (auth.admin_key_env, auth.stats_key_env) if n]
    return [n for n in names if not os.environ.get(n)]


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address (127/8, ::1); a name that merely starts like one is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
