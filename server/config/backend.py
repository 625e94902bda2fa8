"""`backend: memory | redis` with its `url`: the choice every shareable cache or store offers (sessions,
result cache, rerank cache), checked by one rule."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator


class BackendChoice(BaseModel):
    """memory: in this process (not shared); redis: shared by every server process that uses the same prefix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["memory", "redis"] = "memory"
    url: str | None = None  # redis only, e.g. redis://127.0.0.1:6379/0 (use ${VAR} for a password)

    @model_validator(mode="after")
    def _url_for_redis(self) -> BackendChoice:
        if self.backend == "redis" and not self.url:
            raise ValueError("url is required for backend: redis (e.g. redis://127.0.0.1:6379/0)")
        if self.backend == "memory" and self.url:
            raise ValueError("url is only read by backend: redis")
        return self

    @property
    def redis_url(self) -> str:
        """The URL of the redis backend (the validator made it present)."""
        if self.url is None:
            raise ValueError("backend memory has no url")
        return self.url
