"""Serve an aiohttp application on a real TCP port (loopback by default) for as long as a block runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web


@asynccontextmanager
async def serving(app: web.Application, host: str = "127.0.0.1", port: int = 0, **runner: Any) -> AsyncIterator[str]:
    """Yields the base URL (`http://host:port`, the bound port when `port` is 0); extra keywords go to
    web.AppRunner (access_log is off unless given)."""
    app_runner = web.AppRunner(app, **{"access_log": None, "handle_signals": False, **runner})
    await app_runner.setup()
    try:
        await web.TCPSite(app_runner, host, port).start()
        bound_host, bound_port = app_runner.addresses[0][:2]
        yield f"http://{bound_host}:{bound_port}"
    finally:
        await app_runner.cleanup()
