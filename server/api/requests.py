"""Request bodies."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Execution = Literal["route_once", "fan_out"]
SESSION_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"  # a client may use its own conversation id
ADAPTER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"  # an adapter's name in config and in requests
ADAPTER_NAME_MAX = 200  # a name asked for in a request (an error message repeats it)
# an adapter named in a request: anything else is a 400 that does not repeat it
AdapterName = Annotated[str, StringConstraints(pattern=ADAPTER_NAME_PATTERN, max_length=ADAPTER_NAME_MAX)]


class QueryRequest(BaseModel):
    """Body of `POST /v1/query` and `POST /v1/test_routing`."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="the user's question")
    adapter: AdapterName | None = Field(None, description="adapter to ask; default: the server's default adapter")
    session_id: str | None = Field(
        None,
        pattern=SESSION_ID_PATTERN,
        description="the conversation this message belongs to (from an earlier response's session_id, or the "
        "client's own id); /v1/query issues one when absent. test_routing neither reads nor changes sessions.",
    )
    execution: Execution | None = Field(
        None,
        description="a composite only: route_once (one template runs) or fan_out (the best template of each "
        "child scoring at least the composite's min_score runs, in parallel); default: the composite's execution",
    )


Detail = Literal["compact", "full"]


class TestRoutingRequest(QueryRequest):
    """Body of `POST /v1/test_routing`: a query request plus how much of each candidate to show."""

    detail: Detail = Field(
        "compact",
        description="compact: each candidate's scores, ids, description and first nl_example; full: every example",
    )


class CatalogueQuery(BaseModel):
    """Query string of `GET /v1/templates`. Unknown parameters are ignored (cache busters, tracking)."""

    model_config = ConfigDict(extra="ignore")

    adapter: AdapterName | None = Field(None, description="only this adapter (a composite: it and its children)")


class ReloadQuery(BaseModel):
    """Query string of `POST /admin/reload`. Unknown parameters are ignored."""

    model_config = ConfigDict(extra="ignore")

    allow_removal: bool = Field(
        False,
        description="accept a config that removes every adapter, every adapter a client key may query, or "
        "the adapter server.default_adapter names (refused otherwise)",
    )


class StatisticsQuery(BaseModel):
    """Query string of `GET /v1/routing/statistics`. Unknown parameters are ignored."""

    model_config = ConfigDict(extra="ignore")

    adapter: AdapterName | None = Field(None, description="entries asked of or answered by this adapter; default: all")
    kind: Literal["query", "test_routing", "all"] | None = Field(None, description="which endpoint's entries (all)")
    since: str | None = Field(
        None, description="window start: a duration (15m, 24h, 7d), epoch seconds or ISO 8601; default 24h"
    )
