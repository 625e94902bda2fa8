"""Embedding configuration (the `embedding:` block of config.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from ..config.types import EnvVarName
from ..resilience import RetrySettings
from .shared_cache import SharedEmbeddingCacheSettings

# Names accepted for the bundled local model; all mean the same weights.
MINILM_MODEL_NAMES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
MEMORY_BYTES = 32 * 2**20  # the memory LRU's default bound: about 18,500 MiniLM vectors


class EmbeddingCacheSettings(BaseModel, extra="forbid"):
    """Persistent cache of embeddings keyed by model and text, so restarts re-embed nothing."""

    enabled: bool = Field(
        True,
        description="keep embeddings on disk keyed by model and text, so a restart or reload re-embeds only what "
        "changed",
    )
    path: str = Field(
        "data/embedding_cache.sqlite3",
        description="SQLite file of the cache (relative to the config directory's parent)",
    )
    memory_max_bytes: int = Field(
        MEMORY_BYTES,
        ge=0,
        description="bytes the vectors kept in memory in front of the file may hold (32 MiB: about 18,500 "
        "384-d vectors, each counted as its array, key and slot); least recently used leave first. Questions' "
        "vectors; templates' only when nothing persists them (the file and the template stores hold those)",
    )
    # also in Redis, shared by every replica (a new replica starts warm); absent: this replica's file only
    shared: SharedEmbeddingCacheSettings | None = Field(
        None, description="also keep vectors in Redis for every replica; absent: this replica's file only"
    )

    @model_validator(mode="after")
    def _shared_needs_enabled(self) -> EmbeddingCacheSettings:
        if self.shared is not None and not self.enabled:
            raise ValueError("cache.shared needs cache.enabled: true")
        return self


class EmbeddingSettings(BaseModel, extra="forbid"):
    """Which embedding model to use and how to reach it. Secrets come only from the environment."""

    provider: Literal["minilm", "openai_compatible"] = Field(
        "minilm",
        description="`minilm`: the local all-MiniLM-L6-v2 on onnxruntime (offline); `openai_compatible`: an "
        "embeddings API such as Ollama or vLLM",
    )
    model: str = Field(
        "all-MiniLM-L6-v2", description="the model name (for openai_compatible, the name the API expects)"
    )
    model_path: str | None = Field(
        None,
        description="provider minilm: a model folder to run instead of the bundled all-MiniLM-L6-v2 (relative to "
        "the config directory's parent, like cache.path): one written by `run.py tune-encoder`, or any BERT-family "
        "sentence-transformers folder (model.safetensors, tokenizer.json, config.json; pooling read from "
        "modules.json and 1_Pooling/config.json). Leave out `model` then. The embedding cache and the fitted "
        "models are keyed by the folder's contents. A path that names no such folder is a load error (`validate` "
        "and a reload report it with its file and line)",
    )
    base_url: str | None = Field(None, description="openai_compatible: the API's base URL")
    api_key_env: EnvVarName | None = Field(
        None, description="openai_compatible: NAME of the environment variable holding the API key"
    )
    timeout: float = Field(default=30.0, gt=0, description="seconds one embedding call may take")
    batch_size: int = Field(default=64, ge=1, le=4096, description="texts per call when templates are embedded")
    cache: EmbeddingCacheSettings = Field(
        default_factory=EmbeddingCacheSettings, description="the embedding cache on disk (and optionally in Redis)"
    )
    retries: RetrySettings = Field(
        default_factory=RetrySettings,
        description="openai_compatible only: retries of timeouts, connection failures and 429/502/503/504 (with "
        "Retry-After); same keys and rules as an adapter's `retries`",
    )

    @model_validator(mode="after")
    def _check_provider(self) -> EmbeddingSettings:
        if self.provider == "openai_compatible":
            if not self.base_url:
                raise ValueError("provider 'openai_compatible' requires base_url (e.g. http://127.0.0.1:11434/v1)")
            if not self.base_url.startswith(("http://", "https://")):
                raise ValueError("base_url must start with http:// or https://")
            if not self.model.strip():
                raise ValueError("model must not be empty")
        else:
            if self.model_path is not None and "model" in self.model_fields_set:
                raise ValueError("model_path names the model folder: leave out model (the folder says which it is)")
            if self.model_path is not None and not self.model_path.strip():
                raise ValueError("model_path must not be empty")
            if self.model.lower() not in MINILM_MODEL_NAMES:
                raise ValueError(
                    f"provider 'minilm' only bundles all-MiniLM-L6-v2, not {self.model!r}; "
                    "use provider 'openai_compatible' for other models"
                )
            if self.base_url is not None or self.api_key_env is not None or "retries" in self.model_fields_set:
                raise ValueError("base_url, api_key_env and retries apply only to provider 'openai_compatible'")
        if self.provider == "openai_compatible" and self.model_path is not None:
            raise ValueError("model_path applies only to provider 'minilm' (a local model folder)")
        return self
