"""Request bodies and query strings: what the handlers accept, and what /openapi.json says they accept."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic.config import JsonDict

from .visible import visible_pattern

Execution = Literal["route_once", "fan_out"]
SESSION_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"  # a client may use its own conversation id
ADAPTER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"  # an adapter's name in config and in requests
ADAPTER_NAME_MAX = 200  # a name asked for in a request (an error message repeats it)
# an adapter named in a request: anything else is a 400 that does not repeat it
AdapterName = Annotated[str, StringConstraints(pattern=ADAPTER_NAME_PATTERN, max_length=ADAPTER_NAME_MAX)]

# The start of a statistics window, in exactly the forms stats/window.py reads, so that every value the
# pattern admits is a moment it can use: a duration back from now, epoch seconds (at most 11 digits: not
# milliseconds), or an ISO 8601 calendar date (real dates only, 1970 to 9999) with an optional time and offset.
# A duration reaching back before 1970 means the whole log. ASCII digits only ([0-9], not \d: Unicode digits).
_DURATION = r"[0-9]{1,9}(\.[0-9]{1,6})?[smhdw]"
_EPOCH = r"[0-9]{1,11}(\.[0-9]{1,6})?"
_YEAR = r"(19[7-9][0-9]|[2-9][0-9]{3})"
_LEAP_YEAR = r"(19(7[26]|8[048]|9[26])|[2-9][0-9](0[48]|[2468][048]|[13579][26])|([2468][048]|[3579][26])00)"
_MONTH_DAY = r"((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
_DATE = rf"({_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
_TIME = r"T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?"
SINCE_PATTERN = rf"^({_DURATION}|{_EPOCH}|{_DATE}({_TIME})?)$"
Since = Annotated[str, StringConstraints(pattern=SINCE_PATTERN)]


def _query_bool(value: object) -> object:
    """A boolean in a query string is `true` or `false`, nothing else (pydantic would also read yes, 1, on ...)."""
    if isinstance(value, str) and value not in ("true", "false"):
        raise ValueError("use true or false")
    return value


QueryBool = Annotated[bool, BeforeValidator(_query_bool)]


def _visible(schema: JsonDict) -> None:
    schema["pattern"] = visible_pattern()  # what routing/normalise.py's checked_question calls not blank


class QueryRequest(BaseModel):
    """Body of `POST /v1/query` and `POST /v1/test_routing`."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        min_length=1,
        description="the user's question: at least one visible character (whitespace, control and invisible "
        "format characters alone are blank)",
        json_schema_extra=_visible,
    )
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

    allow_removal: QueryBool = Field(
        False,
        description="accept a config that removes every adapter, every adapter a client key may query, or "
        "the adapter server.default_adapter names (refused otherwise)",
    )


class StatisticsQuery(BaseModel):
    """Query string of `GET /v1/routing/statistics`. Unknown parameters are ignored."""

    model_config = ConfigDict(extra="ignore")

    adapter: AdapterName | None = Field(None, description="entries asked of or answered by this adapter; default: all")
    kind: Literal["query", "test_routing", "all"] | None = Field(None, description="which endpoint's entries (all)")
    since: Since | None = Field(
        None,
        description="window start: a duration back from now (15m, 24h, 7d; s, m, h, d or w), epoch seconds, or an "
        "ISO 8601 date or date and time (2026-01-31, 2026-01-31T08:00:00Z); default 24h",
    )
    view: Literal["full", "dashboard"] = Field(
        "full",
        description="dashboard: only the figures the dashboard draws (without by_adapter, by_replica, "
        "by_selected_adapter and errors)",
    )


class LoginForm(BaseModel):
    """Form body of `POST /dashboard/login` (what the login page posts). Unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    key: str = Field(description="the admin or statistics key (a wrong one gets the login page again, 401)")


class ForgetQuestionsRequest(BaseModel):
    """Body of `POST /v1/routing/unmatched/forget`."""

    model_config = ConfigDict(extra="forbid")

    questions: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        min_length=1,
        max_length=100,
        description="questions exactly as the statistics' unmatched_questions list them: their text is removed "
        "from the routing log's no_match entries (the entries and their counts stay)",
    )
