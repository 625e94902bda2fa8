"""The background tune's place in the app: it looks once the server has answered (its start gate) and
after every load, and stops with the app."""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from ..runtime.background_tune import BackgroundTune
from ..runtime.holder import RuntimeHolder
from ..start_gate import START_GATE

BACKGROUND_TUNE = web.AppKey("background_tune", BackgroundTune)
_FIRST_LOOK = web.AppKey("background_tune_first_look", asyncio.Task)


def install_background_tune(app: web.Application, holder: RuntimeHolder) -> BackgroundTune:
    tune = BackgroundTune(holder)
    app[BACKGROUND_TUNE] = tune

    async def first_look() -> None:
        await app[START_GATE].wait()  # a stale folder at start: tuned once the server has answered
        tune.consider()

    async def started(app: web.Application) -> None:
        holder.load_listeners.append(tune.on_load)
        if holder.current.config.app.tune.on_reload:  # else a later reload that turns it on looks (on_load)
            app[_FIRST_LOOK] = asyncio.ensure_future(first_look())

    async def stopped(app: web.Application) -> None:
        if tune.on_load in holder.load_listeners:
            holder.load_listeners.remove(tune.on_load)
        task = app.get(_FIRST_LOOK)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await tune.close()

    app.on_startup.append(started)
    app.on_cleanup.append(stopped)
    return tune
