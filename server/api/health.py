"""The one vocabulary of `status` in /health: of the replica, and of each part it reports (adapters, the
routing log, shared engines, the cluster bus, MCP)."""

from __future__ import annotations

from enum import StrEnum


class Health(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"  # the replica answers, but a part of it is down (still HTTP 200)
    DOWN = "down"  # a part that cannot serve: a source, a shared engine, the bus, MCP
    STARTING = "starting"  # a part held back or loading in the background (the routing log, MCP)
    FAILING = "failing"  # the routing log: its latest write failed
    SATURATED = "saturated"  # MCP: max_sessions are open
