"""One entry of the `rerankers:` config section (`rerankers: {<name>: RerankerSettings}`).

Secrets never live in the file: `api_key_env` names the environment variable that holds the
key. Keys that only one provider reads are rejected for the other, so a setting that would be
silently ignored is an error instead.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...config.types import EnvVarName, HttpUrl

# Settings that only one provider reads: name -> provider.
_PROVIDER_ONLY = {"max_tokens": "anthropic"}


class RerankerSettings(BaseModel):
    """How to reach one reranking provider."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Literal["anthropic", "cohere"]
    model: str = Field(min_length=1)  # e.g. "claude-haiku-4-5" / "rerank-v3.5"
    api_key_env: EnvVarName  # NAME of the environment variable holding the API key
    base_url: HttpUrl | None = None  # a proxy or a local stand-in of the provider's API
    timeout: float = Field(default=10.0, gt=0)  # seconds per attempt; the whole call is capped too
    max_retries: int = Field(default=0, ge=0, le=5)  # SDK retries on 429/5xx/connection errors
    max_tokens: int = Field(default=1024, ge=16, le=8192)  # anthropic only: room for the scores reply

    @model_validator(mode="after")
    def _provider_specific(self) -> RerankerSettings:
        for key, owner in _PROVIDER_ONLY.items():
            if key in self.model_fields_set and self.provider != owner:
                raise ValueError(f"{key} applies only to provider '{owner}', not '{self.provider}'")
        return self

    @property
    def total_timeout(self) -> float:
        """Hard cap on one rerank call, retries included, so routing never waits on backoff."""
        return self.timeout * (self.max_retries + 1)
