"""Run the real app on a loopback port for a test: RuntimeHolder + create_app + aiohttp client."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from server.runtime.holder import RuntimeHolder
from server.web.app import create_app


@asynccontextmanager
async def running_app(config_dir: Path):
    holder = RuntimeHolder(config_dir)
    await holder.start()
    app = create_app(holder)
    server = TestServer(app, host="127.0.0.1", port=0)
    client = TestClient(server)
    await client.start_server()
    try:
        yield client, holder
    finally:
        await client.close()
        await holder.close()
