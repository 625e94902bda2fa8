"""The `cluster:` block of config.yaml: several replicas of this server sharing Redis and/or PostgreSQL.

Off by default (a single process needs nothing). When on, reloads are announced to the other replicas
and every replica publishes a heartbeat; the bus is Redis (`redis_url`) or, with only PostgreSQL at
hand, the routing log's PostgreSQL database (`use_routing_log_db`, LISTEN/NOTIFY and a table).
It sits beside cluster/, not in it: the config model (runtime/settings.py) composes it, and cluster/ builds on
the runtime, so the block lives below both.
"""

from __future__ import annotations

import os
import socket

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .config.types import RedisUrl


class ClusterSettings(BaseModel):
    """Several replicas behind a load balancer: off by default, read at start."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        False,
        description="announce reloads to the other replicas, compare config hashes and send heartbeats (read at start)",
    )
    redis_url: RedisUrl | None = Field(
        None, description="the bus on Redis pub/sub, e.g. redis://127.0.0.1:6379/0 (use ${VAR} for a password)"
    )
    use_routing_log_db: bool = Field(
        False,
        description="the bus on PostgreSQL LISTEN/NOTIFY in the routing log's database (stats.url) when no redis_url "
        "is given",
    )
    # how this replica is named in /v1/cluster and the routing log; unset: hostname:pid.
    # Give each replica its own with ${VAR} so that the config files stay identical (same config hash).
    replica_name: str | None = Field(
        None,
        min_length=1,
        max_length=120,
        description="this replica's name in /v1/cluster and the routing log; unset: hostname:pid",
    )
    heartbeat_seconds: float = Field(
        5.0, gt=0, le=300, description="seconds between heartbeats; a replica missing three is no longer listed"
    )
    key_prefix: str = Field(
        "intent-router:cluster:", min_length=1, max_length=200, description="prefix of the Redis keys and channel"
    )

    @model_validator(mode="after")
    def _one_bus(self) -> ClusterSettings:
        if not self.enabled:
            if self.redis_url or self.use_routing_log_db:
                raise ValueError("cluster.redis_url / use_routing_log_db are only read with cluster.enabled: true")
            return self
        if not self.redis_url and not self.use_routing_log_db:
            raise ValueError("cluster.enabled needs redis_url or use_routing_log_db: true (stats.url on PostgreSQL)")
        if self.redis_url and self.use_routing_log_db:
            raise ValueError("cluster: give redis_url or use_routing_log_db, not both (one bus carries the reloads)")
        return self

    @property
    def backend(self) -> str:
        return "redis" if self.redis_url else "postgres"

    def name(self) -> str:
        return self.replica_name or f"{socket.gethostname()}:{os.getpid()}"
