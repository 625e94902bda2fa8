"""The `cluster:` block of config.yaml: several replicas of this server sharing Redis and/or PostgreSQL.

Off by default (a single process needs nothing). When on, reloads are announced to the other replicas
and every replica publishes a heartbeat; the bus is Redis (`redis_url`) or, with only PostgreSQL at
hand, the routing log's PostgreSQL database (`use_routing_log_db`, LISTEN/NOTIFY and a table).
"""

from __future__ import annotations

import os
import socket

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..config.types import RedisUrl


class ClusterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    redis_url: RedisUrl | None = None  # e.g. redis://127.0.0.1:6379/0 (use ${VAR} for a password)
    use_routing_log_db: bool = False  # bus on stats.url (PostgreSQL) when no redis_url is given
    # how this replica is named in /v1/cluster and the routing log; unset: hostname:pid.
    # Give each replica its own with ${VAR} so that the config files stay identical (same config hash).
    replica_name: str | None = Field(None, min_length=1, max_length=120)
    heartbeat_seconds: float = Field(5.0, gt=0, le=300)  # a replica missing 3 heartbeats is no longer listed
    key_prefix: str = Field("intent-router:cluster:", min_length=1, max_length=200)  # Redis keys and channel

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
