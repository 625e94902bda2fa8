"""`backend: memory | redis` with its `url`: the choice every shareable cache or store offers (sessions,
result cache, rerank cache), checked by one rule: a key that only the other backend reads is an error."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .types import RedisUrl


class BackendChoice(BaseModel):
    """memory: in this process (not shared); redis: shared by every server process that uses the same prefix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # keys that only one backend reads (a subclass adds its own): set under the other one, they are errors
    redis_only: ClassVar[tuple[str, ...]] = ("url",)
    memory_only: ClassVar[tuple[str, ...]] = ()

    backend: Literal["memory", "redis"] = Field(
        "memory",
        description="`memory`: in this process, not shared; `redis`: shared by every server process using the same "
        "Redis and prefix",
    )
    url: RedisUrl | None = Field(
        None, description="redis only: the Redis URL, e.g. redis://127.0.0.1:6379/0 (use ${VAR} for a password)"
    )

    @model_validator(mode="after")
    def _keys_for_backend(self) -> BackendChoice:
        if self.backend == "redis" and not self.url:
            raise ValueError("url is required for backend: redis (e.g. redis://127.0.0.1:6379/0)")
        other, keys = ("redis", self.redis_only) if self.backend == "memory" else ("memory", self.memory_only)
        for key in keys:
            if key in self.model_fields_set:
                raise ValueError(f"{key} is only read by backend: {other}")
        return self

    @property
    def redis_url(self) -> str:
        """The URL of the redis backend (the validator made it present)."""
        if self.url is None:
            raise ValueError("backend memory has no url")
        return self.url
