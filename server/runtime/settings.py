"""The top-level `config.yaml` model. Each concern owns its block's model; this file composes them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..adapters.result_cache import ResultCacheSettings
from ..auth.settings import AuthSettings, ClientKey
from ..cluster_settings import ClusterSettings
from ..config.cache_settings import ConfigCacheSettings
from ..conversations.settings import SessionSettings
from ..embedding.settings import EmbeddingSettings
from ..mcp_settings import SESSION_KEYS, MCPSettings
from ..rerankers.settings import RerankerSettings
from ..rerankers.shared_cache import RerankCacheSettings
from ..routing.settings import CompositeRetrievalSettings
from ..server_settings import ServerSettings
from ..stats.settings import StatsSettings
from ..stores.factory import StoreSettings
from ..tune_settings import TuneConfig

__all__ = ["AppSettings", "AuthSettings", "ClientKey", "ServerSettings"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    tune: TuneConfig = Field(
        default_factory=TuneConfig,
        description="`run.py tune-encoder`'s budget and out-of-scope anchors, and the background tune after an edit "
        "(off by default)",
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
    def _tune_target(self) -> AppSettings:
        if self.tune.on_reload and (self.embedding.provider != "minilm" or self.embedding.model_path is None):
            raise ValueError(
                "tune.on_reload tunes the local encoder into embedding.model_path: it needs embedding.provider "
                "minilm and a model_path (run `run.py tune-encoder` once, then point model_path at its folder)"
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
