"""One entry of the `rerankers:` config section (`rerankers: {<name>: RerankerSettings}`).

Secrets never live in the file: `api_key_env` names the environment variable that holds the
key. Keys that only some providers read are rejected for the others, so a setting that would be
silently ignored is an error instead.

Providers: `anthropic` and `openai` (a chat model scores every candidate in one structured
reply), `cohere` (its rerank API) and `rerank_api` (a self-hosted cross-encoder server speaking
the common `/rerank` API: text-embeddings-inference, vLLM, Jina-compatible servers).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..config.types import EnvVarName, HttpUrl

Provider = Literal["anthropic", "cohere", "openai", "rerank_api"]

# Settings that only some providers read: name -> those providers.
_PROVIDER_ONLY: dict[str, tuple[str, ...]] = {
    "max_tokens": ("anthropic", "openai"),
    "api_format": ("rerank_api",),
}
# Self-hosted rerank servers often run without a key and serve one model: both are optional there.
_OPTIONAL_FOR = ("rerank_api",)


class RerankerSettings(BaseModel):
    """How to reach one reranking provider."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Provider = Field(
        description="`anthropic`, `openai`, `cohere` (their SDKs) or `rerank_api` (a self-hosted /rerank server)"
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description="the model, e.g. claude-haiku-4-5, gpt-4.1-mini, rerank-v3.5 (optional for rerank_api)",
    )
    api_key_env: EnvVarName | None = Field(
        None, description="NAME of the environment variable holding the API key (required except for rerank_api)"
    )
    base_url: HttpUrl | None = Field(
        None,
        description="a proxy, an OpenAI-compatible server, or (rerank_api, required) the rerank server, e.g. "
        "http://tei:8080",
    )
    timeout: float = Field(
        default=10.0, gt=0, description="seconds per attempt; the whole call is capped at timeout x (max_retries + 1)"
    )
    max_retries: int = Field(
        default=0, ge=0, le=5, description="retries of 429, 5xx and connection failures (honouring Retry-After)"
    )
    max_tokens: int = Field(default=1024, ge=16, le=8192, description="anthropic, openai: room for the scores reply")
    # rerank_api only: `jina` sends {model, query, documents, top_n} (Jina, vLLM, Cohere-like servers);
    # `tei` sends {query, texts} (Hugging Face text-embeddings-inference). Both reply shapes are read.
    api_format: Literal["jina", "tei"] = Field(
        "jina", description="rerank_api: `jina` sends {model, query, documents, top_n}; `tei` sends {query, texts}"
    )

    @model_validator(mode="after")
    def _provider_specific(self) -> RerankerSettings:
        for key, owners in _PROVIDER_ONLY.items():
            if key in self.model_fields_set and self.provider not in owners:
                names = " or ".join(f"'{owner}'" for owner in owners)
                raise ValueError(f"{key} applies only to provider {names}, not '{self.provider}'")
        if self.provider not in _OPTIONAL_FOR:
            for key in ("model", "api_key_env"):
                if getattr(self, key) is None:
                    raise ValueError(f"{key} is required for provider '{self.provider}'")
        if self.provider == "rerank_api":
            if self.base_url is None:
                raise ValueError(
                    "base_url is required for provider 'rerank_api' (the rerank server, e.g. http://tei:8080)"
                )
            if self.api_format == "tei" and self.model is not None:
                raise ValueError("model is not sent in api_format 'tei' (the server serves one model): remove it")
        return self

    @property
    def model_name(self) -> str:
        """The model, for providers where the validator made it required."""
        if self.model is None:
            raise ValueError(f"provider '{self.provider}' has no model configured")
        return self.model

    @property
    def total_timeout(self) -> float:
        """Hard cap on one rerank call, retries included, so routing never waits on backoff."""
        return self.timeout * (self.max_retries + 1)


class PerformanceSettings(BaseModel):
    """A composite's rerank concurrency and its cache of rerank scores (`composite_retrieval.performance`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parallel_rerank: bool = Field(True, description="send the reranker's request while the local stages compute")
    cache_rerank_results: bool = Field(
        True, description="cache rerank scores per reranker model, question, adapter, template and template text"
    )
    cache_ttl_seconds: float = Field(
        300,
        gt=0,
        description="lifetime of a cached rerank score (to turn the cache off use cache_rerank_results: false)",
    )
    cache_max_entries: int = Field(10_000, ge=1, description="bound of a composite's rerank cache (oldest out first)")
