"""DNS-rebinding protection for a server that listens on loopback: the one rule, on every route.

Without keys a loopback server trusts whoever can reach it, and a web page can: its name re-resolved to
127.0.0.1, the user's browser sends the page's requests to this server as same-origin ones, and the page
reads the answers (salaries from /v1/query) or fires /admin/reload. A browser always names the host it
resolved in `Host`, and the page's own in `Origin`. So on a loopback server a request is answered only
when `Host` names loopback (127.0.0.1 and the rest of 127/8, localhost, ::1; any port) or one of
`server.allowed_hosts` (a reverse proxy's public name), and an `Origin`, when there is one, names the same
(421 and 403 otherwise, in the usual JSON error body). Clients that are not browsers (curl, a chat
backend) send loopback's own name or no `Origin`. Off loopback (0.0.0.0, an interface) the keys protect
the server and nothing is checked here. /mcp included: the MCP SDK's own check is off, this is the rule.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web
from yarl import URL

from ..auth import is_loopback
from ..errors import error_body
from ..server_settings import host_name

Settings = Callable[[], tuple[str, Iterable[str]]]  # the listening host and server.allowed_hosts, now


def allowed(name: str, extra: Iterable[str]) -> bool:
    """Loopback, or one of `extra` (server.allowed_hosts, which its validator keeps as bare names)."""
    return is_loopback(name) or name in extra


def origin_host(origin: str) -> str | None:
    """The host an `Origin` names; None for `null` or anything that is not an http(s) origin."""
    try:
        url = URL(origin)
    except ValueError:
        return None
    return url.host.lower() if url.scheme in ("http", "https") and url.host else None


def refusal(
    host: str | None, origin: str | None, listening: str, extra: Iterable[str], site: str | None = None
) -> web.Response | None:
    """The answer to a request that is not addressed to this loopback server, or None to serve it. `site`:
    `Sec-Fetch-Site`, which a page cannot set: an `Origin` of `null` is a page's own form (Chromium sends it
    for the dashboard's login) only when the browser says the request is same-origin."""
    if not is_loopback(listening):
        return None
    extra = list(extra)
    if host is not None and not allowed(host_name(host), extra):  # none: HTTP/1.0 probes; browsers always send it
        return web.json_response(
            error_body(
                "misdirected_request",
                "this server listens on loopback and answers only requests addressed to 127.0.0.1, localhost or "
                "::1 (or a name in server.allowed_hosts)",
            ),
            status=421,
        )
    if origin is not None and not (origin == "null" and site in ("same-origin", "none")):
        named = origin_host(origin)
        if named is None or not allowed(named, extra):
            return web.json_response(
                error_body("forbidden", "requests from pages of another site are not served"), status=403
            )
    return None


def host_guard(settings: Settings) -> Callable[..., Awaitable[web.StreamResponse]]:
    """The middleware, reading the listening host and allowed names of the config in force (a reload applies)."""

    @web.middleware
    async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        listening, extra = settings()
        headers = request.headers
        refused = refusal(headers.get("Host"), headers.get("Origin"), listening, extra, headers.get("Sec-Fetch-Site"))
        return refused if refused is not None else await handler(request)

    return guard
