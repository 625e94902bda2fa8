"""The top-level `config.yaml` model. Each concern owns its block's model; this file composes them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..adapters.result_cache import ResultCacheSettings
from ..cluster.settings import ClusterSettings
from ..config.types import EnvVarName
from ..conversations.settings import SessionSettings
from ..embedding.settings import EmbeddingSettings
from ..mcp.settings import SESSION_KEYS, MCPSettings
from ..routing.rerankers.settings import RerankerSettings
from ..routing.rerankers.shared_cache import RerankCacheSettings
from ..routing.settings import CompositeRetrievalSettings
from ..stats.settings import StatsSettings
from ..stores.factory import StoreSettings


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(_Strict):
    """The `server:` block: where `serve` listens and how long a request may take. The three read timeouts
    (header, body, keep-alive) apply to `serve`, take effect on reload for new connections, and bound slow
    clients (slowloris)."""

    host: str = Field(
        "127.0.0.1", description="address `serve` listens on; without auth keys only a loopback address is allowed"
    )
    port: int = Field(8080, ge=0, le=65535, description="port `serve` listens on (0: any free port)")
    request_timeout: float = Field(
        30.0,
        gt=0,
        description="seconds a question may take in all (routing, parameters, the query and its retries) before it is"
        " answered with a timeout error",
    )
    # slow clients (server/web/slow_clients.py): a request's headers, then its body, must arrive within these
    header_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="seconds for a request's headers to arrive, counted from the connection's opening or the first "
        "byte of its next request; past it the connection is closed (slow clients)",
    )
    body_timeout: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="seconds for a request body to arrive in full, counted before request_timeout starts; past it: "
        "408 body_timeout and the connection is closed",
    )
    keepalive_timeout: float = Field(
        75.0, gt=0, le=3600, description="seconds an idle keep-alive connection stays open"
    )
    max_question_chars: int = Field(
        2000, ge=1, description="longest question accepted, as asked and once normalised (400 beyond)"
    )
    # one-thread forward passes of the local encoder run side by side under concurrency (embedding/lanes.py);
    # unset: one per core this worker gets (lanes.resolve_lanes), 0: every question on the multi-threaded session
    encoder_lanes: int | None = Field(
        None,
        ge=0,
        le=64,
        description="one-thread forward passes of the local encoder that run concurrent questions side by side; "
        "unset: one per core of this process's share, at most 4; 0: off. Applied at start and at every "
        "reload",
    )
    # used when a request names no adapter; unset: the first composite, else the first adapter
    default_adapter: str | None = Field(
        None,
        description="the adapter a request without `adapter` asks; unset: the first composite, else the first adapter",
    )


class ClientKey(_Strict):
    name: str = Field(description="the key's name (in logs, metrics and session ownership)")
    key_env: EnvVarName = Field(description="NAME of the environment variable holding the key")
    adapters: list[str] | None = Field(
        None, description="the adapters this key may query (a composite's children included); unset: all"
    )


class AuthSettings(_Strict):
    """The `auth:` block: API keys by role. Without keys the server serves without authentication and
    listens only on loopback."""

    client_keys: list[ClientKey] = Field(
        default_factory=list,
        description="API keys that may query adapters (`/v1/query`, `/v1/test_routing`, `/v1/templates`, `/mcp`)",
    )
    admin_key_env: EnvVarName | None = Field(
        None, description="NAME of the environment variable holding the admin key: everything, including /admin/reload"
    )
    stats_key_env: EnvVarName | None = Field(
        None,
        description="NAME of the environment variable holding the read-only key for statistics, metrics and the "
        "dashboard",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.client_keys or self.admin_key_env)


class AppSettings(_Strict):
    server: ServerSettings = Field(default_factory=ServerSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    composite_retrieval: CompositeRetrievalSettings = Field(default_factory=CompositeRetrievalSettings)
    rerankers: dict[str, RerankerSettings] = Field(default_factory=dict)
    rerank_cache: RerankCacheSettings = Field(default_factory=RerankCacheSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    stats: StatsSettings = Field(default_factory=StatsSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    result_cache: ResultCacheSettings = Field(default_factory=ResultCacheSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)

    @model_validator(mode="after")
    def _reranker_exists(self) -> AppSettings:
        provider = self.composite_retrieval.reranking.provider
        if self.composite_retrieval.reranking.enabled and provider not in self.rerankers:
            raise ValueError(
                f"composite_retrieval.reranking.provider '{provider}' is not in the rerankers section "
                f"(have: {sorted(self.rerankers)})"
            )
        return self

    @model_validator(mode="after")
    def _cluster_database(self) -> AppSettings:
        if self.cluster.use_routing_log_db:
            url = self.stats.url or ""
            if not (self.stats.enabled and url.startswith("postgresql")):
                raise ValueError(
                    "cluster.use_routing_log_db needs the routing log on PostgreSQL (stats.url: postgresql+...)"
                )
        return self

    @model_validator(mode="after")
    def _mcp_sessions_read(self) -> AppSettings:
        if self.mcp.transport == "auto" and self.cluster.enabled:
            for key in SESSION_KEYS:
                if key in self.mcp.model_fields_set:
                    raise ValueError(
                        f"mcp.{key} is not read: with cluster.enabled /mcp is stateless (mcp.transport: auto); "
                        "give mcp.transport: stateful only behind a load balancer that keeps a client on one replica"
                    )
        return self
