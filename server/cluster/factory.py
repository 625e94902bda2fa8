"""Build this replica's cluster member on the bus its settings name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .bus import ClusterBus
from .member import ClusterMember

if TYPE_CHECKING:
    from ..runtime.holder import RuntimeHolder
    from ..runtime.settings import AppSettings


def build_bus(app: AppSettings) -> ClusterBus:
    settings = app.cluster
    if settings.redis_url:
        from .redis_bus import RedisBus

        return RedisBus(settings.redis_url, settings.key_prefix)
    from .postgres_bus import PostgresBus

    assert app.stats.url is not None  # validated: use_routing_log_db needs stats.url on PostgreSQL
    return PostgresBus(app.stats.url, app.stats.table)


def build_member(holder: RuntimeHolder, app: AppSettings) -> ClusterMember:
    return ClusterMember(holder, app.cluster, build_bus(app))
