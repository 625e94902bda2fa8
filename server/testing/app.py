"""Run the real app for a test: on a loopback port (RuntimeHolder + create_app + aiohttp client), or its
runtime alone, in process (`running_runtime`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from server.runtime.build import Runtime, build_runtime
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_config
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


@asynccontextmanager
async def running_runtime(config_dir: Path) -> AsyncIterator[Runtime]:
    """The runtime a config builds (its adapters started, sessions included), closed afterwards."""
    runtime = await build_runtime(load_config(config_dir))
    try:
        yield runtime
    finally:
        await runtime.close()
