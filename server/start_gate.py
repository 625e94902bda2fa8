"""Optional background starts held back until the server has answered.

Some parts start in the background with work that holds the GIL for a long time: the routing log
imports SQLAlchemy to open its file, MCP imports its SDK. Begun while the server was still starting,
they took the GIL from it and delayed the first answer by about half a second on a slow machine. They
now wait for this gate, which opens when the first response goes out, when something needs one of them
(a /mcp request, a reader of the routing log), or `FALLBACK_SECONDS` after the app's other starts are
done, whichever comes first. Until then /health reports them as "starting", as it did while they loaded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

FALLBACK_SECONDS = 1.0  # opened by then even if nobody has asked anything


Schedule = Callable[[float, Callable[[], None]], Any]  # loop.call_later: returns a handle with cancel()


class StartGate:
    """Opened once, by whichever comes first; `wait` returns from then on. `schedule` arms the fallback
    (the running loop's `call_later` unless a test passes its own clock's)."""

    def __init__(self, schedule: Schedule | None = None) -> None:
        self._open = asyncio.Event()
        self._timer: Any = None
        self._schedule = schedule
        self.waiting = 0  # starts held back at the gate now

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def open(self) -> None:
        """Let held-back starts begin (idempotent)."""
        self._open.set()
        self.disarm()

    def open_later(self, seconds: float = FALLBACK_SECONDS) -> None:
        """Open after `seconds` at the latest (armed by the app's last startup hook)."""
        if self._timer is None and not self._open.is_set():
            schedule = self._schedule or asyncio.get_running_loop().call_later
            self._timer = schedule(seconds, self.open)

    async def wait(self) -> None:
        self.waiting += 1
        try:
            await self._open.wait()
        finally:
            self.waiting -= 1

    def disarm(self) -> None:
        """No fallback timer any more (opened, or the app stops: waiters are cancelled by their owners)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


START_GATE = web.AppKey("start_gate", StartGate)


def install_start_gate(app: web.Application) -> StartGate:
    """The app's gate, opened by its first response (install it before what waits for it)."""
    gate = StartGate()
    app[START_GATE] = gate

    async def first_response(_: web.Request, __: web.StreamResponse) -> None:
        gate.open()

    async def stopped(_: web.Application) -> None:
        gate.disarm()

    app.on_response_prepare.append(first_response)
    app.on_cleanup.append(stopped)
    return gate


def arm_start_gate(app: web.Application) -> None:
    """Open the gate `FALLBACK_SECONDS` after the app's other starts are done (call it after installing
    everything else: startup hooks run in order, so the cluster and a shared routing log have started)."""
    gate = app[START_GATE]

    async def armed(_: web.Application) -> None:
        gate.open_later()

    app.on_startup.append(armed)
