"""A round-robin reverse proxy on loopback for tests: each request goes to the next upstream, as nginx's default
`upstream` block or a Kubernetes Service spreads them, with no session affinity. Bodies are streamed both ways
(an MCP event stream stays a stream), `Host` is passed on unchanged (as the shipped nginx.conf does), and
which upstream served what is recorded for the test to check."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from .loopback import serving

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "content-length", "accept-encoding"}
)  # fmt: skip


@dataclass
class RoundRobinProxy:
    upstreams: list[str]
    served: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, upstream) in order
    _turn: int = 0
    _client: aiohttp.ClientSession | None = None

    def next_upstream(self) -> str:
        upstream = self.upstreams[self._turn % len(self.upstreams)]
        self._turn += 1
        return upstream

    async def handle(self, request: web.Request) -> web.StreamResponse:
        assert self._client is not None
        upstream = self.next_upstream()
        self.served.append((request.method, request.path, upstream))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["Accept-Encoding"] = "identity"  # bytes pass through as they are
        body = await request.read()
        async with self._client.request(
            request.method, upstream + request.path_qs, headers=headers, data=body or None, allow_redirects=False
        ) as upstream_response:
            response = web.StreamResponse(status=upstream_response.status)
            for name, value in upstream_response.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    response.headers.add(name, value)
            await response.prepare(request)
            async for chunk in upstream_response.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    def upstreams_of(self, method: str, path: str) -> list[str]:
        return [upstream for m, p, upstream in self.served if m == method and p == path]


@asynccontextmanager
async def round_robin(upstreams: list[str]) -> AsyncIterator[tuple[str, RoundRobinProxy]]:
    """Serve a proxy over `upstreams` (base URLs) on a loopback port; yields its URL and the proxy."""
    proxy = RoundRobinProxy(list(upstreams))
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
    async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as client:
        proxy._client = client
        async with serving(app) as url:
            yield url, proxy
