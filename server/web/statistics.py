"""`GET /v1/routing/statistics`: the adapter's description, live figures from the routing log and the
config status."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from ..adapters.base import DataAdapter
from ..api.requests import StatisticsQuery
from ..api.responses import (
    AdapterSummary,
    CircuitView,
    ConfigStatusView,
    LoadStatusView,
    SourceHealthView,
    StatisticsResponse,
)
from ..bulkhead import STATISTICS_POOL, run_on
from ..errors import IntentRouterError
from ..routing.routable import Routable, RoutingSource
from ..runtime.holder import LoadStatus, RuntimeHolder
from ..stats import RoutingLog
from ..stats.settings import StatsSettings
from ..stats.window import parse_since

log = logging.getLogger("intent_router.stats")
UNMATCHED_SHOWN = 15  # most asked unmatched questions listed


async def statistics_body(
    holder: RuntimeHolder, rlog: RoutingLog | None, params: StatisticsQuery
) -> StatisticsResponse:
    runtime = holder.current
    asked = params.adapter
    adapter = runtime.get(asked) if asked else runtime.default_adapter()
    now = time.time()
    kind = None if params.kind == "all" else params.kind
    figures: dict[str, Any]
    if rlog is None:
        figures = {"enabled": False}
    else:
        from ..stats.aggregates import Window, compute  # SQLAlchemy: loaded by the log, not at import

        window = Window(parse_since(params.since, now), now, asked, kind)
        await rlog.ready()
        try:
            figures = await run_on(
                STATISTICS_POOL,
                compute,
                rlog.engine,
                rlog.table,
                window,
                rlog.rollups,
                UNMATCHED_SHOWN,
                params.view,
                rlog.settings.max_window_rows,
            )
        except Exception as exc:
            log.warning("routing log query failed: %s: %s", type(exc).__name__, exc)
            raise IntentRouterError(
                "the routing log database cannot be read", code="stats_unavailable", status=503
            ) from None
        figures["score_histogram"]["threshold"] = adapter.routing_policy().confidence_threshold
        figures["enabled"] = True
        figures["store_queries"] = rlog.settings.store_queries
        figures["log"] = rlog.status()
    return StatisticsResponse(
        **adapter.describe(),
        adapter=adapter.name,
        routing_log=figures,
        adapters=[AdapterSummary(name=a.name, type=a.type_name) for a in runtime.adapters.values()],
        sources=[_source_health(s) for s in _sources_shown(runtime.adapters.values(), adapter if asked else None)],
        config_status=ConfigStatusView(
            config_file=_relative(runtime.config.config_file, runtime.config.root),
            last_load=_load_view(holder.last_load),
            last_good_load=_load_view(holder.last_good_load),
            stats_settings=_stats_settings(_stats_in_effect(holder, rlog), runtime.config.root),
        ),
        generated_at=now,
    )


def _sources_shown(adapters: Any, asked: Routable | None) -> list[DataAdapter]:
    """Every data adapter, or those the asked adapter routes over (itself, or a composite's children)."""
    if asked is not None:
        return [s.adapter for s in asked.routing_sources()]
    return [a.adapter for a in adapters if isinstance(a, RoutingSource)]


def _source_health(adapter: DataAdapter) -> SourceHealthView:
    guard = adapter.guard.snapshot()
    return SourceHealthView(
        adapter=adapter.name,
        type=adapter.type_name,
        circuit=CircuitView.model_validate(guard.pop("circuit")),
        bulkhead=adapter.bulkhead.snapshot(),
        **guard,
    )


def _load_view(status: LoadStatus | None) -> LoadStatusView | None:
    return LoadStatusView.model_validate(status.to_json()) if status is not None else None


def _relative(path: Path, root: Path) -> str:
    """A path as the operator wrote the config: relative to the project root (never the absolute path)."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return path.name


def _stats_settings(settings: StatsSettings, root: Path) -> dict[str, Any]:
    shown = settings.model_dump(mode="json", exclude={"url"})
    if Path(shown["path"]).is_absolute():
        shown["path"] = _relative(Path(shown["path"]), root)
    return shown


def _stats_in_effect(holder: RuntimeHolder, rlog: RoutingLog | None) -> StatsSettings:
    """What the routing log runs with: its own settings, or (no log) those of the start; a reload that
    changed what only a restart applies must not be reported as in effect."""
    if rlog is not None:
        return rlog.settings
    started = holder.started_app
    return started.stats if started is not None else holder.current.config.app.stats
