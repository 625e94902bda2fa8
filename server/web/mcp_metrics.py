"""MCP sessions in Prometheus: read from `/mcp`'s session ledger when Prometheus scrapes.

Open sessions per API key (by the key's name from config.yaml, so the label set is bounded by the config),
the caps they are held to, whether the process is saturated, and the sessions opened, refused and closed
to make room. With `/mcp` stateless (cluster.enabled, `serve --workers N`) there are no sessions: only
`intent_router_mcp_stateless 1` is reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..mcp.http import MCP
from ..runtime.holder import RuntimeHolder


class MCPSessionCollector(Collector):
    def __init__(self, app: web.Application, holder: RuntimeHolder) -> None:
        self.app = app
        self.holder = holder

    def collect(self) -> Iterator[Any]:
        endpoint = self.app.get(MCP)
        if endpoint is None or endpoint.stateless is None:  # no /mcp, or the SDK has not started yet
            return
        yield GaugeMetricFamily(
            "intent_router_mcp_stateless", "1 when /mcp runs without MCP sessions", value=int(endpoint.stateless)
        )
        if endpoint.stateless:
            return
        try:
            quota = self.holder.current.config.app.mcp.quota
        except RuntimeError:  # no config loaded
            return
        figures = endpoint.ledger.figures(quota)
        open_by_key = GaugeMetricFamily("intent_router_mcp_sessions_open", "MCP sessions open", labels=["key"])
        for key, count in sorted(figures.open_by_key.items()):
            open_by_key.add_metric([key], count)
        yield open_by_key
        yield GaugeMetricFamily("intent_router_mcp_sessions_idle", "Open MCP sessions, nothing in flight", figures.idle)
        yield GaugeMetricFamily("intent_router_mcp_sessions_max", "mcp.max_sessions (all keys)", figures.quota.total)
        yield GaugeMetricFamily(
            "intent_router_mcp_sessions_max_per_key", "mcp.max_sessions_per_key", figures.quota.per_owner
        )
        yield GaugeMetricFamily(
            "intent_router_mcp_sessions_saturated",
            "1 while the open MCP sessions reach mcp.max_sessions",
            value=int(figures.saturated),
        )
        yield GaugeMetricFamily(
            "intent_router_mcp_keys_at_session_cap", "API keys holding mcp.max_sessions_per_key", figures.keys_at_cap
        )
        yield CounterMetricFamily("intent_router_mcp_sessions_opened", "MCP sessions opened", value=figures.opened)
        refused = CounterMetricFamily(
            "intent_router_mcp_sessions_refused",
            "New MCP sessions refused (owner_cap: the key's own cap, 429; total_cap: the process's, 503)",
            labels=["reason"],
        )
        closed = CounterMetricFamily(
            "intent_router_mcp_sessions_closed_for_room",
            "Idle MCP sessions closed to make room for a new one, by the cap that called for it",
            labels=["reason"],
        )
        for reason, count in figures.refused.items():
            refused.add_metric([reason], count)
        for reason, count in figures.closed_for_room.items():
            closed.add_metric([reason], count)
        yield from (refused, closed)
