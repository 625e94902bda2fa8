"""A loopback JSON API that fails on command, for the retry and circuit-breaker tests.

`GET /items` answers `{"items": [...]}` unless a failure is scripted: `fail(n, status, retry_after=)`
makes the next n requests fail with that status (and a `Retry-After` header when given), `down = True`
makes every request answer 503 until it is set back. Every request is recorded with its arrival
time (`arrivals`, monotonic seconds), so a test observes retries on the server side.
"""

from __future__ import annotations

import time
from collections import deque

from aiohttp import web

from server.testing.anthropic_standin import LoopbackServer

ITEMS = [{"id": 1, "name": "alpha"}, {"id": 2, "name": "beta"}]


class FlakyApi(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []
        self.down = False
        self.delay = 0.0
        self._script: deque[tuple[int, str | None]] = deque()

    def fail(self, times: int, status: int = 503, retry_after: str | None = None) -> None:
        self._script.extend([(status, retry_after)] * times)

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/items", self._items), web.get("/{tail:.*}", self._not_found)]

    async def _not_found(self, request: web.Request) -> web.Response:
        self.arrivals.append(time.monotonic())
        await self.record(request)
        return web.json_response({"error": "no such path"}, status=404)

    async def _items(self, request: web.Request) -> web.Response:
        self.arrivals.append(time.monotonic())
        await self.record(request)
        await self.pause(self.delay)
        if self.down:
            return web.json_response({"error": "down"}, status=503)
        if self._script:
            status, retry_after = self._script.popleft()
            headers = {"Retry-After": retry_after} if retry_after is not None else {}
            return web.json_response({"error": "try later"}, status=status, headers=headers)
        return web.json_response({"items": ITEMS})
