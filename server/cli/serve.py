"""Serve HTTP: refuse a non-loopback bind without API keys, say where we listen."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from aiohttp import web

from ..config.loader import load_app_settings
from ..runtime.holder import RuntimeHolder
from ..runtime.watcher import attach_watcher
from ..web.app import create_app
from ..web.auth import is_loopback, missing_key_envs

log = logging.getLogger("intent_router.serve")


def serve(config: Path, host: str | None, port: int | None) -> int:
    app_settings = load_app_settings(config)  # auth and address checks before anything is built
    settings = app_settings.server
    host = host or settings.host
    port = settings.port if port is None else port
    auth = app_settings.auth
    if not auth.enabled and not is_loopback(host):
        print(
            f"refusing to listen on {host}: no API keys are configured (auth.client_keys / auth.admin_key_env). "
            "Configure keys, or listen on 127.0.0.1.",
            file=sys.stderr,
        )
        return 2
    missing = missing_key_envs(auth)
    if missing:
        print(f"refusing to start: API key variables are not set: {', '.join(missing)}", file=sys.stderr)
        return 2
    if not auth.enabled:
        log.warning("no API keys configured: serving without authentication, on loopback only (%s)", host)
    asyncio.run(_serve(config, host, port))
    return 0


async def _serve(config: Path, host: str, port: int) -> None:
    holder = RuntimeHolder(config)
    runtime = await holder.start()
    app = create_app(holder)
    attach_watcher(app, holder)  # reload when config or template files change
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log.info(
        "Intent Router listening on http://%s:%d (%d adapters, started in %.2f s)",
        host,
        port,
        len(runtime.adapters),
        runtime.build_seconds,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
        await holder.close()
