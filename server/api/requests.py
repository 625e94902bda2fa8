"""Request bodies."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class QueryRequest(BaseModel):
    """Body of `POST /v1/query` and `POST /v1/test_routing`."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="the user's question")
    adapter: str | None = Field(None, description="adapter to ask; default: the server's default adapter")
