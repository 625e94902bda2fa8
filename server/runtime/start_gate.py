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

from aiohttp import web

FALLBACK_SECONDS = 1.0  # opened by then even if nobody has asked anything


class StartGate:
    """Opened once, by whichever comes first; `wait` returns from then on."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None

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
            self._timer = asyncio.get_running_loop().call_later(seconds, self.open)

    async def wait(self) -> None:
        await self._open.wait()

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
