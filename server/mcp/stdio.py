"""`python run.py mcp`: the MCP server over stdio, for desktop assistants that launch a command.

The process loads the config like the HTTP server does, watches the YAML files and reloads on a
change (telling the assistant with tools/list_changed). The local user who launched it has full
access (as on a loopback server without keys). Logs go to stderr; stdout carries only MCP messages.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mcp.server.stdio import stdio_server

from ..auth import ANONYMOUS_ADMIN
from ..runtime.holder import RuntimeHolder
from ..runtime.watcher import ConfigWatcher
from .server import build_server

log = logging.getLogger("intent_router.mcp")


async def serve_stdio(config: Path, watch: bool = True) -> None:
    holder = RuntimeHolder(config)
    runtime = await holder.start()
    watcher = ConfigWatcher(holder) if watch else None
    if watcher is not None:
        watcher.start()
    server, _ = build_server(holder, ANONYMOUS_ADMIN)
    log.info("Intent Router MCP server on stdio (%d adapters)", len(runtime.adapters))
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        if watcher is not None:
            await watcher.stop()
        await holder.close()
