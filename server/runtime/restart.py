"""config.yaml settings that a running server cannot change: a reload reports them as needing a restart.

Everything else in config.yaml takes effect on reload: the runtime is rebuilt from it (adapters,
embedding, store, composite_retrieval, rerankers, rerank_cache, auth, sessions, result_cache), handlers read the
`server` timeouts and limits per request or connection, the routing log takes its live settings
(store_queries, retention, batching, max_window_rows) from every good load, and `/mcp` its session caps and
idle timeout for the sessions opened after it. What is left is bound
when the process starts: the listening socket, where and how the routing log is stored and queued,
the cluster membership and how `/mcp` keeps MCP sessions.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .settings import AppSettings

RESTART_KEYS: tuple[str, ...] = (
    "server.host",
    "server.port",
    "stats.enabled",
    "stats.url",
    "stats.path",
    "stats.table",
    "stats.queue_size",
    "cluster",
    "mcp.transport",
)


def setting(settings: BaseModel, dotted: str) -> Any:
    value: Any = settings
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def restart_required(started: AppSettings, current: AppSettings) -> list[str]:
    """Keys whose value in `current` differs from the one the process started with (and still uses)."""
    return [key for key in RESTART_KEYS if setting(started, key) != setting(current, key)]
