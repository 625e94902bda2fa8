"""`GET /v1/routing/statistics`: the adapter's description, live figures from the routing log and the
config status."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..errors import BadRequest, IntentRouterError
from ..runtime.holder import RuntimeHolder
from ..stats import RoutingLog
from ..stats.aggregates import Window, compute
from ..stats.window import parse_since

log = logging.getLogger("intent_router.stats")

KINDS = (None, "query", "test_routing")


async def statistics_body(holder: RuntimeHolder, rlog: RoutingLog | None, query: Any) -> dict[str, Any]:
    runtime = holder.current
    asked = query.get("adapter") or None
    adapter = runtime.get(asked) if asked else runtime.default_adapter()
    body: dict[str, Any] = dict(adapter.describe())
    body["adapter"] = adapter.name
    now = time.time()
    kind = query.get("kind") or None
    if kind == "all":
        kind = None
    if kind not in KINDS:
        raise BadRequest("kind: one of query, test_routing, all")
    settings = runtime.config.app.stats
    if rlog is None:
        body["routing_log"] = {"enabled": False}
    else:
        window = Window(parse_since(query.get("since"), now), now, asked, kind)
        try:
            figures = await asyncio.to_thread(compute, rlog.engine, rlog.table, window, rlog.settings.max_window_rows)
        except Exception as exc:
            log.warning("routing log query failed: %s: %s", type(exc).__name__, exc)
            raise IntentRouterError(
                "the routing log database cannot be read", code="stats_unavailable", status=503
            ) from None
        figures["score_histogram"]["threshold"] = adapter.routing_policy().confidence_threshold
        figures["enabled"] = True
        figures["store_queries"] = rlog.settings.store_queries
        figures["log"] = rlog.status()
        body["routing_log"] = figures
    body["adapters"] = [{"name": a.name, "type": a.type_name} for a in runtime.adapters.values()]
    body["config_status"] = {
        "config_file": str(runtime.config.config_file),
        "last_load": holder.last_load.to_json() if holder.last_load else None,
        "last_good_load": holder.last_good_load.to_json() if holder.last_good_load else None,
        "stats_settings": settings.model_dump(exclude={"url"}),
    }
    body["generated_at"] = now
    return body
