"""Routing log (every query and test_routing decision) and the aggregates behind the dashboard."""

from .record import RoutingRecord
from .settings import StatsSettings
from .writer import RoutingLog

__all__ = ["RoutingLog", "RoutingRecord", "StatsSettings"]
