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
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    request_timeout: float = Field(30.0, gt=0)
    # slow clients (server/web/slow_clients.py): a request's headers, then its body, must arrive within these
    header_timeout: float = Field(10.0, gt=0, le=3600)
    body_timeout: float = Field(30.0, gt=0, le=3600)
    keepalive_timeout: float = Field(75.0, gt=0, le=3600)  # an idle keep-alive connection is closed after this
    max_question_chars: int = Field(2000, ge=1)
    # one-thread forward passes of the local encoder run side by side under concurrency (embedding/lanes.py);
    # unset: one per core this worker gets (lanes.resolve_lanes), 0: every question on the multi-threaded session
    encoder_lanes: int | None = Field(None, ge=0, le=64)
    # used when a request names no adapter; unset: the first composite, else the first adapter
    default_adapter: str | None = None


class ClientKey(_Strict):
    name: str
    key_env: EnvVarName  # NAME of the environment variable holding the key
    adapters: list[str] | None = None  # restrict this key to these adapters; None = all


class AuthSettings(_Strict):
    client_keys: list[ClientKey] = Field(default_factory=list)
    admin_key_env: EnvVarName | None = None
    stats_key_env: EnvVarName | None = None  # read-only key for statistics and the dashboard

    @property
    def enabled(self) -> bool:
        return bool(self.client_keys or self.admin_key_env)


class ConfigCacheSettings(_Strict):
    """Parsed template libraries and body checks kept on disk by content hash (config/parse_cache.py)."""

    enabled: bool = Field(
        True,
        description="keep parsed template libraries and SQL/body checks by content hash, so a start or reload "
        "parses only the files that changed",
    )
    path: str = Field(
        "data/config_cache", description="the cache's directory (relative to the config directory's parent)"
    )


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
    config_cache: ConfigCacheSettings = Field(
        default_factory=ConfigCacheSettings, description="what a config load keeps on disk for the next one"
    )

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
