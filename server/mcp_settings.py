"""The `mcp:` block of config.yaml: how `/mcp` (streamable HTTP) keeps MCP sessions, and how many.

An MCP session of the SDK lives in the process that opened it: its id means nothing to another replica
(404 "Session not found"), so behind a load balancer that spreads requests (round robin, a Kubernetes
Service) `/mcp` runs stateless: every request stands alone and any replica answers it. In one process a
session costs about 42 KB and lives until the client ends it or it idles out, so sessions are capped per API
key and for the whole process, with the rule of owner_quota.py (idle sessions make room, open streams never
do). Imported by the config model: nothing here imports the MCP SDK.
It sits beside mcp/, not in it: the config model (runtime/settings.py) composes it, and mcp/ builds on
the runtime, so the block lives below both.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .owner_quota import Quota

SESSION_KEYS = ("max_sessions", "max_sessions_per_key", "idle_timeout_seconds")


class MCPSettings(BaseModel):
    """MCP over streamable HTTP at `/mcp`: stateful sessions (capped per API key) or stateless requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # auto: stateless with cluster.enabled or `serve --workers N`, stateful otherwise;
    # stateful: MCP sessions in this process (behind a load balancer only with session affinity);
    # stateless: every request stands alone (no sessions, no server-initiated notifications). Read at start.
    transport: Literal["auto", "stateful", "stateless"] = Field(
        "auto",
        description="`auto`: stateless with cluster.enabled or `serve --workers N`, else stateful; `stateful` | "
        "`stateless` force one (read at start)",
    )
    # stateful only: MCP sessions open in this process, all API keys together (the SDK's own default is 10,000)
    max_sessions: int = Field(
        2_000,
        ge=1,
        le=100_000,
        description="stateful: MCP sessions open in this process, all keys together (~42 KB each)",
    )
    # stateful only: sessions one API key may hold open; beyond it its least recently used idle one is closed
    max_sessions_per_key: int = Field(
        200, ge=1, le=100_000, description="stateful: MCP sessions one API key may hold open"
    )
    # stateful only: a session with no request in flight (and no open event stream) this long is closed
    idle_timeout_seconds: float = Field(
        600.0,
        gt=0,
        le=86_400,
        description="stateful: a session with no request in flight and no open stream this long is closed",
    )

    @model_validator(mode="after")
    def _sessions_need_state(self) -> MCPSettings:
        if self.transport == "stateless":
            for key in SESSION_KEYS:
                if key in self.model_fields_set:
                    raise ValueError(f"mcp.{key} is only read by the stateful transport (mcp.transport: stateless)")
        return self

    @property
    def quota(self) -> Quota:
        return Quota(per_owner=self.max_sessions_per_key, total=self.max_sessions)

    def stateless(self, cluster_enabled: bool, several_workers: bool = False) -> bool:
        """Whether `/mcp` runs without sessions: the one place `transport: auto` is decided."""
        if several_workers:  # the kernel spreads connections over the workers: a session cannot follow its client
            return True
        if self.transport == "auto":
            return cluster_enabled
        return self.transport == "stateless"
