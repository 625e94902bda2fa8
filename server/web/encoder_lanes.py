"""The local encoder's lanes open once the server has answered (its start gate), like the other optional
background starts: opening a session holds a core for ~0.2 s, which the start should not share."""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from ..runtime.holder import RuntimeHolder
from ..start_gate import START_GATE

_TASK = web.AppKey("encoder_lanes_task", asyncio.Task)


def install_encoder_lanes(app: web.Application, holder: RuntimeHolder) -> None:
    """After the gate opens, the holder keeps the lanes in line with `server.encoder_lanes` (reloads too)."""

    async def after_gate() -> None:
        await app[START_GATE].wait()
        holder.start_encoder_lanes()

    async def started(app: web.Application) -> None:
        app[_TASK] = asyncio.ensure_future(after_gate())

    async def stopped(app: web.Application) -> None:
        task = app.get(_TASK)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app.on_startup.append(started)
    app.on_cleanup.append(stopped)
