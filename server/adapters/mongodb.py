"""MongoDB adapter (pymongo async): find, aggregate, count and distinct with typed placeholders.

Parameters are literal values in the parsed filter or pipeline. Inside aggregation expressions, where a
string such as "$price" would read a field, values are wrapped in `$literal`, so a string parameter is
always data: never an operator object, a field path or a `$where`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..api.health import Health
from ..config.errors import ConfigIssue
from ..config.parsed_body import ParsedBody
from ..errors import QueryFailed, SourceTimeout, SourceUnavailable
from ..templates import ParameterType, Template
from .base import Counting, DataAdapter, DataAdapterSettings, QueryResult
from .placeholders import (
    Path,
    Placeholder,
    keys_in,
    parse_structure,
    pattern_issues,
    placeholders_in,
    render,
    static_value,
)
from .row_values import to_json_value
from .source_check import SourceCheck, refusal

if TYPE_CHECKING:
    from pymongo import AsyncMongoClient

log = logging.getLogger("intent_router.adapters.mongodb")

# Server-side JavaScript, writes and server introspection are never allowed in a template.
FORBIDDEN_OPERATORS = frozenset(
    {
        "$where",
        "$function",
        "$accumulator",
        "$out",
        "$merge",
        "$currentOp",
        "$listSessions",
        "$listLocalSessions",
        "$planCacheStats",
    }
)
_BARE_STAGES = frozenset({"$limit", "$skip", "$sample", "$sort"})  # stage arguments that are plain values


class MongoConnection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="mongodb:// URL; put credentials in it with ${VAR} from the environment")
    database: str = Field(min_length=1, description="the database templates query")
    pool_size: int = Field(10, ge=1, le=500, description="largest connection pool")
    connect_timeout: float = Field(5.0, gt=0, description="seconds to connect")


class MongoDBAdapterSettings(DataAdapterSettings):
    connection: MongoConnection = Field(description="the MongoDB server")


class MongoBody(BaseModel):
    """The `mongodb:` block of a template, after placeholders were parsed."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    collection: str = Field(min_length=1, pattern=r"^[^$\x00]+$")
    operation: Literal["find", "aggregate", "count", "distinct"] = "find"
    filter: dict[str, Any] | None = None
    pipeline: list[dict[str, Any]] | None = None
    projection: dict[str, Any] | None = None
    sort: dict[str, Literal[1, -1]] | None = None
    limit: int | Placeholder | None = None
    key: str | None = None  # the field of a distinct

    @model_validator(mode="after")
    def _fits_operation(self) -> MongoBody:
        allowed = {
            "find": {"filter", "projection", "sort", "limit"},
            "aggregate": {"pipeline"},
            "count": {"filter"},
            "distinct": {"filter", "key"},
        }[self.operation]
        used = {k for k in ("filter", "pipeline", "projection", "sort", "limit", "key") if getattr(self, k) is not None}
        stray = sorted(used - allowed)
        if stray:
            raise ValueError(f"operation '{self.operation}' does not take {stray}")
        if self.operation == "aggregate" and not self.pipeline:
            raise ValueError("operation 'aggregate' needs a non-empty pipeline")
        if self.operation == "distinct" and not self.key:
            raise ValueError("operation 'distinct' needs a key")
        if self.pipeline is not None:
            for i, stage in enumerate(self.pipeline):
                if len(stage) != 1 or not next(iter(stage)).startswith("$"):
                    raise ValueError(f"pipeline[{i}] must be one stage such as {{$match: ...}}")
        if isinstance(self.limit, int) and self.limit < 1:
            raise ValueError("limit must be at least 1")
        return self


def parse_mongo_body(raw: Any) -> ParsedBody:
    if not isinstance(raw, dict):
        raise ValueError("mongodb must be a mapping with collection, operation, filter|pipeline, ...")
    parsed = parse_structure(raw, "mongodb")
    for part in ("collection", "operation", "projection", "sort", "key"):
        static_value(parsed.value.get(part), f"mongodb.{part}")
    try:
        body = MongoBody.model_validate(parsed.value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"mongodb{'.' + where if where else ''}: {first['msg']}") from None
    bad = sorted({k for k in keys_in([body.filter, body.pipeline]) if k in FORBIDDEN_OPERATORS})
    if bad:
        raise ValueError(f"mongodb: operators {bad} are not allowed in templates")
    for path, _ in placeholders_in(body.pipeline or [], ("pipeline",)):
        if _stage_of(path) in {"$lookup", "$unionWith", "$graphLookup"} and path[3:4] in {("from",), ("coll",)}:
            raise ValueError("mongodb: the collection of a $lookup/$unionWith cannot be a placeholder")
    return ParsedBody(body, parsed.placeholders)


def collections_read(body: MongoBody) -> list[str]:
    """The collections a body reads: its own, then those of its $lookup / $graphLookup / $unionWith stages."""
    names = [body.collection]
    for stage in body.pipeline or []:
        for operator, spec in stage.items():
            if operator in ("$lookup", "$graphLookup") and isinstance(spec, dict) and isinstance(spec.get("from"), str):
                names.append(spec["from"])
            elif operator == "$unionWith":
                name = spec.get("coll") if isinstance(spec, dict) else spec
                if isinstance(name, str):
                    names.append(name)
    return list(dict.fromkeys(names))


def _is_regex(path: Path) -> bool:
    keys = [p for p in path if isinstance(p, str)]
    if "$regex" in keys:
        return True
    return any(
        k in {"$regexMatch", "$regexFind", "$regexFindAll"} and keys[i + 1 : i + 2] == ["regex"]
        for i, k in enumerate(keys)
    )


def _stage_of(path: Path) -> str | None:
    return path[2] if len(path) > 2 and path[0] == "pipeline" and isinstance(path[2], str) else None


def value_context(path: Path) -> Literal["query", "expression", "bare"]:
    """How MongoDB reads a value at this path: query filter, aggregation expression or a plain argument."""
    context: Literal["query", "expression", "bare"] = "query" if path[:1] == ("filter",) else "bare"
    for i, part in enumerate(path):
        at_stage = i >= 2 and isinstance(path[i - 1], int) and path[i - 2] == "pipeline"
        if part == "$expr":
            context = "expression"
        elif at_stage and part == "$match":
            context = "query"
        elif at_stage and isinstance(part, str):
            context = "bare" if part in _BARE_STAGES else "expression"
    return context


def _wrap(value: Any, path: Path) -> Any:
    return {"$literal": value} if value_context(path) == "expression" else value


def bson_params(template: Template, params: dict[str, Any]) -> dict[str, Any]:
    """Dates and datetimes as BSON dates (MongoDB compares them natively); everything else unchanged."""
    out = dict(params)
    for spec in template.parameters:
        value = out.get(spec.name)
        if isinstance(value, str) and spec.type is ParameterType.DATE:
            out[spec.name] = dt.datetime.combine(dt.date.fromisoformat(value), dt.time())
        elif isinstance(value, str) and spec.type is ParameterType.DATETIME:
            out[spec.name] = dt.datetime.fromisoformat(value)
    return out


# Server error codes that mean "try again" (step-down, shutdown, network trouble between members);
# everything else (bad query, unauthorized, ...) is permanent.
_TRANSIENT_CODES = frozenset({6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436})


def is_transient_error(exc: BaseException) -> bool:
    """Network errors and primary step-downs are worth another attempt; server selection that already
    waited its full timeout, authentication and query errors are not."""
    from pymongo.errors import AutoReconnect, OperationFailure, PyMongoError, ServerSelectionTimeoutError

    if isinstance(exc, ServerSelectionTimeoutError):
        return False
    if isinstance(exc, AutoReconnect):  # NotPrimaryError, NetworkTimeout, connection reset
        return True
    if isinstance(exc, PyMongoError) and exc.has_error_label("RetryableReadError"):
        return True
    return isinstance(exc, OperationFailure) and exc.code in _TRANSIENT_CODES


def own_limit(body: MongoBody, params: dict[str, Any]) -> int | None:
    """The template's own limit for these values: a find's `limit`, or an aggregate's last stage when it
    is a `$limit` (None: the template sets none)."""
    if body.operation == "find":
        limit = render(body.limit, params, None, ("limit",))
    elif body.operation == "aggregate" and body.pipeline and set(body.pipeline[-1]) == {"$limit"}:
        index = len(body.pipeline) - 1
        limit = render(body.pipeline[-1]["$limit"], params, None, ("pipeline", index, "$limit"))
    else:
        return None
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError("limit must be a positive integer")
    return limit


def counting_body(body: MongoBody, defaults: frozenset[str]) -> tuple[MongoBody, frozenset[str]] | None:
    """A body that counts what `body` answers, and the placeholders it no longer has: a find becomes a
    count of its filter, an aggregate ends in `$count` instead of its last `$limit`. The limit is lifted
    only when it is a placeholder the question left at its default (see own_limit.counting_query)."""
    if body.operation == "find":
        limit = body.limit
        counted = MongoBody(collection=body.collection, operation="count", filter=body.filter)
    elif body.operation == "aggregate" and body.pipeline:
        last = body.pipeline[-1]
        limit = last["$limit"] if set(last) == {"$limit"} else None
        stages = body.pipeline[:-1] if limit is not None else body.pipeline
        counted = MongoBody(collection=body.collection, operation="aggregate", pipeline=[*stages, {"$count": "rows"}])
    else:
        return None  # a count is one already; a distinct's values are not rows a question counts
    if limit is None:
        return counted, frozenset()
    if not isinstance(limit, Placeholder) or limit.name not in defaults:
        return None
    kept = {p.name for _, p in placeholders_in([counted.filter, counted.pipeline])}
    return counted, frozenset({limit.name} - kept)


def render_mongo(body: MongoBody, params: dict[str, Any], cap: int, answer: bool = False) -> dict[str, Any]:
    """The exact operation sent to the server, with every parameter as a literal value. At most cap + 1
    documents come back; for an answer, the template's own limit asks for one more too, so that an answer
    it cut is known to be cut (DataAdapter.answering)."""
    sent: dict[str, Any] = {"collection": body.collection, "operation": body.operation}
    own = own_limit(body, params)
    if body.operation == "aggregate":
        pipeline = render(body.pipeline, params, _wrap, ("pipeline",), dates_as_text=False)
        if answer and own is not None:
            pipeline[-1] = {"$limit": own + 1}
        sent["pipeline"] = [*pipeline, {"$limit": cap + 1}]
        return sent
    sent["filter"] = render(body.filter or {}, params, _wrap, ("filter",), dates_as_text=False)
    if body.operation == "find":
        limit = cap + 1 if own is None else own + 1 if answer else own
        sent.update(projection=body.projection, sort=body.sort, limit=min(limit, cap + 1))
    elif body.operation == "distinct":
        sent["key"] = body.key
    return sent


class MongoDBAdapter(DataAdapter):
    type_name = "mongodb"
    settings_model = MongoDBAdapterSettings
    body_key: ClassVar[str] = "mongodb"

    settings: MongoDBAdapterSettings

    @classmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        return parse_mongo_body(raw)

    @classmethod
    def check_templates(cls, settings: Any, templates: list[Template]) -> list[ConfigIssue]:
        """A placeholder used as a `$regex` (or a $regexMatch/$regexFind regex) needs pattern_allowed."""
        return [
            issue
            for t in templates
            for issue in pattern_issues(
                t, [("mongodb", {"filter": t.body.filter, "pipeline": t.body.pipeline})], _is_regex
            )
        ]

    def __init__(self, settings, context) -> None:
        super().__init__(settings, context)
        self._client: AsyncMongoClient[dict[str, Any]] | None = None

    async def start(self) -> None:
        from pymongo import AsyncMongoClient

        conn = self.settings.connection
        ms = int(conn.connect_timeout * 1000)
        self._client = AsyncMongoClient(
            conn.url,
            maxPoolSize=conn.pool_size,
            serverSelectionTimeoutMS=ms,
            connectTimeoutMS=ms,
            appname="intent-router",
            tz_aware=True,
        )

    async def close_source(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def source_health(self) -> dict[str, Any]:
        if self._client is None:
            return {"status": Health.DOWN, "reason": "not connected"}
        try:
            await asyncio.wait_for(self._client.admin.command("ping"), self.settings.connection.connect_timeout)
            return {"status": Health.OK}
        except Exception:
            return {"status": Health.DOWN, "reason": "cannot reach the MongoDB server"}

    async def check_against_source(self) -> SourceCheck:
        """Every collection a template reads (its own, a $lookup's or $unionWith's) exists in the database."""
        templates = list(self.templates.values())
        if self._client is None:
            return SourceCheck.unchecked(self.name, len(templates), "not connected")
        try:
            async with asyncio.timeout(self.settings.connection.connect_timeout):
                names = set(await self._client[self.settings.connection.database].list_collection_names())
        except Exception:  # unreachable, refused, timed out: unchecked, not an error
            return SourceCheck.unchecked(self.name, len(templates), "cannot reach the MongoDB server")
        database = self.settings.connection.database
        issues = tuple(
            refusal(f"{self.name} (mongodb)", t, "mongodb", f"no collection '{name}' in database '{database}'")
            for t in templates
            for name in collections_read(t.body)
            if name not in names
        )
        return SourceCheck(self.name, "checked", len(templates), issues=issues)

    def render_request(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> dict[str, Any]:
        return render_mongo(
            template.body, bson_params(template, params), self.row_cap(max_rows), self.answering(max_rows)
        )

    def _shown_rows(self, template: Template, params: dict[str, Any], max_rows: int | None) -> int:
        """The rows an answer shows: the row cap, or the template's own limit when smaller."""
        cap = self.row_cap(max_rows)
        own = own_limit(template.body, bson_params(template, params)) if self.answering(max_rows) else None
        return cap if own is None else min(cap, own)

    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        from pymongo.errors import ConnectionFailure, ExecutionTimeout, PyMongoError

        if self._client is None:
            raise SourceUnavailable(self.name, "adapter is not started")
        request = self.request_for(template, params, max_rows)
        timeout = self.query_timeout
        try:
            docs = await asyncio.wait_for(self._run(request, int(timeout * 1000)), timeout)
        except (TimeoutError, ExecutionTimeout):
            raise SourceTimeout(self.name, timeout) from None
        except ConnectionFailure as exc:
            log.warning("mongodb adapter %s cannot reach the server: %s", self.name, exc)
            raise SourceUnavailable(
                self.name, "cannot reach the MongoDB server", transient=is_transient_error(exc)
            ) from None
        except PyMongoError as exc:
            log.warning("mongodb adapter %s template %s failed: %s", self.name, template.id, exc)
            if is_transient_error(exc):  # a primary stepping down, an interrupted read: the replica set recovers
                raise SourceUnavailable(self.name, "MongoDB is changing primary", transient=True) from None
            raise QueryFailed(self.name, f"template '{template.id}' failed to run") from None
        cap = self._shown_rows(template, params, max_rows)  # valid: request_for rendered it already
        rows = [{str(k): to_json_value(v) for k, v in doc.items()} for doc in docs[:cap]]
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        return QueryResult(rows=rows, columns=list(columns), truncated=len(docs) > cap)

    def counting(self, template: Template, params: dict[str, Any], defaults: frozenset[str]) -> Counting | None:
        found = counting_body(template.body, defaults)
        return None if found is None else Counting.of(template, found[0], params, found[1])

    async def _run(self, request: dict[str, Any], max_ms: int) -> list[dict[str, Any]]:
        assert self._client is not None
        coll = self._client[self.settings.connection.database][request["collection"]]
        operation = request["operation"]
        if operation == "find":
            sort = list(request["sort"].items()) if request["sort"] else None
            cursor = coll.find(
                request["filter"], request["projection"], sort=sort, limit=request["limit"], max_time_ms=max_ms
            )
            return await cursor.to_list(None)
        if operation == "aggregate":
            command_cursor = await coll.aggregate(request["pipeline"], maxTimeMS=max_ms)
            return await command_cursor.to_list(None)
        if operation == "count":
            return [{"count": await coll.count_documents(request["filter"], maxTimeMS=max_ms)}]
        key = request["key"]
        return [{key: v} for v in await coll.distinct(key, request["filter"], maxTimeMS=max_ms)]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": "mongodb", "database": self.settings.connection.database}
