"""Elasticsearch adapter (official async client): an index and a search body with typed placeholders;
hits or aggregation buckets mapped to rows.

No silent widening: a parameter without a value is an error (never a dropped clause that would turn a
filter into match_all), and a reply without the expected hits or aggregation is an error, not [].
Placeholders are refused where Elasticsearch parses text as syntax (query_string, scripts' source).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from yarl import URL

from ..api.health import Health
from ..config.errors import ConfigError, ConfigIssue
from ..config.parsed_body import ParsedBody
from ..config.types import EnvVarName
from ..errors import QueryFailed, SourceTimeout, SourceUnavailable
from ..resilience import parse_retry_after, transient_http_status
from ..templates import Template
from .base import DataAdapter, DataAdapterSettings, QueryResult
from .json_rows import ResponseMapping, map_rows
from .placeholders import Path, parse_structure, pattern_issues, placeholders_in, render, static_value
from .source_check import SourceCheck, refusal

if TYPE_CHECKING:
    from elasticsearch import AsyncElasticsearch

log = logging.getLogger("intent_router.adapters.elasticsearch")

_SYNTAX_KEYS = frozenset({"query_string", "simple_query_string"})  # their text is parsed as query syntax
_SCRIPT_TEXT = frozenset({"source", "id", "lang"})  # under "script": code, not data


class ESConnection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="http:// or https:// URL of the cluster")
    api_key_env: EnvVarName | None = Field(None, description="NAME of the environment variable holding an API key")
    username: str | None = Field(None, description="basic auth user (with password_env)")
    password_env: EnvVarName | None = Field(
        None, description="NAME of the environment variable holding the basic auth password"
    )
    verify_certs: bool = Field(True, description="verify the server's TLS certificate")
    ca_certs: str | None = Field(None, description="a CA bundle file to verify it with")
    pool_size: int = Field(10, ge=1, le=500, description="connections kept open")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        url = URL(value)
        if url.scheme not in {"http", "https"} or not url.host:
            raise ValueError("url must be an http:// or https:// URL with a host")
        return value

    @model_validator(mode="after")
    def _one_auth(self) -> ESConnection:
        if self.api_key_env and (self.username or self.password_env):
            raise ValueError("use either api_key_env or username/password_env, not both")
        if (self.username is None) != (self.password_env is None):
            raise ValueError("basic auth needs both username and password_env")
        return self


class ElasticsearchAdapterSettings(DataAdapterSettings):
    connection: ESConnection = Field(description="the Elasticsearch cluster")


class ESBody(BaseModel):
    """`aggregation` names the aggregation whose buckets become rows; without it rows are the hits
    (`_id` plus `_source`). `fields` picks and renames columns like the http adapter's response."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    index: str = Field(min_length=1, pattern=r"^[^\s/\\?#\"<>|]+$")
    body: dict[str, Any] = Field(default_factory=dict)
    aggregation: str | None = None
    fields: list[str] | dict[str, str] | None = None

    @model_validator(mode="after")
    def _aggregation_exists(self) -> ESBody:
        if self.aggregation is not None:
            aggs = self.body.get("aggs") or self.body.get("aggregations") or {}
            if self.aggregation not in aggs:
                raise ValueError(f"aggregation '{self.aggregation}' is not defined in body.aggs")
        return self


_PATTERN_QUERIES = frozenset({"wildcard", "regexp"})  # their value is a pattern (*, ?, regex syntax)
_PATTERN_OPTIONS = frozenset({"case_insensitive", "boost", "flags", "max_determinized_states", "rewrite"})


def _is_pattern(path: Path) -> bool:
    keys = [p for p in path if isinstance(p, str)]
    return bool(_PATTERN_QUERIES & set(keys)) and keys[-1] not in _PATTERN_OPTIONS


def parse_es_body(raw: Any) -> ParsedBody:
    if not isinstance(raw, dict):
        raise ValueError("elasticsearch must be a mapping with index and body")
    parsed = parse_structure(raw, "elasticsearch")
    for part in ("index", "aggregation", "fields"):
        static_value(parsed.value.get(part), f"elasticsearch.{part}")
    try:
        body = ESBody.model_validate(parsed.value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(
            f"elasticsearch{'.' + where if where else ''}: {first['msg'].removeprefix('Value error, ')}"
        ) from None
    for path, holder in placeholders_in(body.body, ("body",)):
        keys = [p for p in path if isinstance(p, str)]
        if _SYNTAX_KEYS & set(keys):
            raise ValueError(
                f"elasticsearch: placeholder '{holder.name}' inside query_string is parsed as "
                "query syntax; use match/term instead"
            )
        if "script" in keys and keys[-1] in _SCRIPT_TEXT and keys[-2:-1] == ["script"]:
            raise ValueError(f"elasticsearch: placeholder '{holder.name}' cannot be script code; use script.params")
    return ParsedBody(body, parsed.placeholders)


def render_search(body: ESBody, params: dict[str, Any], cap: int) -> dict[str, Any]:
    """The exact search body sent; `size` is clamped to the row cap (+1 to see truncation)."""
    for _, holder in placeholders_in(body.body):
        if params.get(holder.name) is None:
            raise ValueError(f"parameter '{holder.name}' has no value")
    rendered = render(body.body, params)
    size = rendered.get("size")
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError("size must be a non-negative integer")
        rendered["size"] = min(size, cap + 1)
    return rendered


def _total_hits(hits: Any) -> int:
    """How many documents matched, as the reply counts them (`hits.total`, a number or {value, relation});
    0 when the search did not count them (track_total_hits: false)."""
    total = hits.get("total") if isinstance(hits, dict) else None
    value = total.get("value") if isinstance(total, dict) else total
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def bucket_rows(name: str, result: Any) -> list[dict[str, Any]]:
    """An aggregation's result as rows: one per bucket (key, doc_count, each sub-aggregation's value),
    or a single row for a metric aggregation."""
    if not isinstance(result, dict):
        raise KeyError(name)
    if "buckets" not in result:
        if "value" in result:
            return [{name: result.get("value_as_string", result["value"])}]
        raise KeyError(name)
    buckets = result["buckets"]
    items = buckets.items() if isinstance(buckets, dict) else ((None, b) for b in buckets)
    rows = []
    for key, bucket in items:
        row = {
            "key": key if key is not None else bucket.get("key_as_string", bucket.get("key")),
            "doc_count": bucket.get("doc_count"),
        }
        for sub, value in bucket.items():
            if isinstance(value, dict) and "value" in value:
                row[sub] = value.get("value_as_string", value["value"])
        rows.append(row)
    return rows


class ElasticsearchAdapter(DataAdapter):
    type_name = "elasticsearch"
    settings_model = ElasticsearchAdapterSettings
    body_key: ClassVar[str] = "elasticsearch"

    settings: ElasticsearchAdapterSettings

    @classmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        return parse_es_body(raw)

    @classmethod
    def check_templates(cls, settings: Any, templates: list[Template]) -> list[ConfigIssue]:
        """A placeholder used as a wildcard or regexp query value needs pattern_allowed."""
        return [issue for t in templates for issue in pattern_issues(t, [("elasticsearch", t.body.body)], _is_pattern)]

    def __init__(self, settings, context) -> None:
        super().__init__(settings, context)
        self._client: AsyncElasticsearch | None = None

    def _auth(self) -> dict[str, Any]:
        import os

        conn = self.settings.connection
        env_name = conn.api_key_env or conn.password_env
        if env_name is None:
            return {}
        secret = os.environ.get(env_name)
        if not secret:
            key = "api_key_env" if conn.api_key_env else "password_env"
            raise ConfigError(
                [ConfigIssue(self.name, None, f"connection.{key}", f"environment variable {env_name} is not set")]
            )
        return {"api_key": secret} if conn.api_key_env else {"basic_auth": (conn.username, secret)}

    async def start(self) -> None:
        from elastic_transport.client_utils import DEFAULT
        from elasticsearch import AsyncElasticsearch

        conn = self.settings.connection
        self._client = AsyncElasticsearch(
            hosts=[conn.url],
            request_timeout=self.settings.query_timeout,
            max_retries=0,  # retried by the adapter's `retries:` policy (resilience.py), not by the client
            retry_on_timeout=False,
            connections_per_node=conn.pool_size,
            verify_certs=conn.verify_certs,
            ca_certs=DEFAULT if conn.ca_certs is None else conn.ca_certs,  # DEFAULT: the client's own default
            **self._auth(),
        )

    async def close_source(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def source_health(self) -> dict[str, Any]:
        if self._client is None:
            return {"status": Health.DOWN, "reason": "not connected"}
        try:
            alive = await asyncio.wait_for(self._client.ping(), self.settings.query_timeout)
        except Exception:
            alive = False
        return {"status": Health.OK} if alive else {"status": Health.DOWN, "reason": "cannot reach Elasticsearch"}

    async def check_against_source(self) -> SourceCheck:
        """Every index (or alias, or pattern matching one) a template searches exists."""
        templates = list(self.templates.values())
        if self._client is None:
            return SourceCheck.unchecked(self.name, len(templates), "not connected")
        indices = sorted({t.body.index for t in templates})
        try:
            async with asyncio.timeout(self.settings.query_timeout):
                found = {name: bool(await self._client.indices.exists(index=name)) for name in indices}
        except Exception:  # unreachable, refused, timed out: unchecked, not an error
            return SourceCheck.unchecked(self.name, len(templates), "cannot reach Elasticsearch")
        issues = tuple(
            refusal(f"{self.name} (elasticsearch)", t, "elasticsearch.index", f"no index '{t.body.index}'")
            for t in templates
            if not found[t.body.index]
        )
        return SourceCheck(self.name, "checked", len(templates), issues=issues)

    def render_request(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> dict[str, Any]:
        body: ESBody = template.body
        return {"index": body.index, "body": render_search(body, params, self.row_cap(max_rows))}

    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        from elasticsearch import ApiError, ConnectionTimeout, TransportError, UnsupportedProductError

        if self._client is None:
            raise SourceUnavailable(self.name, "adapter is not started")
        request = self.request_for(template, params, max_rows)
        timeout = self.settings.query_timeout
        try:
            response = await asyncio.wait_for(
                self._client.search(index=request["index"], body=request["body"]), timeout + 1
            )
        except (TimeoutError, ConnectionTimeout):
            raise SourceTimeout(self.name, timeout) from None
        except UnsupportedProductError:
            raise SourceUnavailable(self.name, "the server is not Elasticsearch") from None
        except ApiError as exc:
            log.warning("elasticsearch adapter %s template %s: %s", self.name, template.id, exc)
            status = exc.meta.status
            if status == 429 or status >= 500:
                raise SourceUnavailable(
                    self.name,
                    f"Elasticsearch answered HTTP {status}",
                    transient=transient_http_status(status),
                    retry_after=parse_retry_after(exc.meta.headers.get("Retry-After")),
                ) from None
            raise QueryFailed(
                self.name, f"template '{template.id}': Elasticsearch answered HTTP {exc.meta.status}"
            ) from None
        except TransportError as exc:
            log.warning("elasticsearch adapter %s cannot reach the server: %s", self.name, exc)
            raise SourceUnavailable(self.name, "cannot reach Elasticsearch", transient=True) from None
        return self._rows(template, response.body, self.row_cap(max_rows), self.answering(max_rows))

    def _rows(self, template: Template, reply: Any, cap: int, answer: bool) -> QueryResult:
        body: ESBody = template.body
        mapping = ResponseMapping(fields=body.fields)
        try:
            if body.aggregation is not None:
                result = reply["aggregations"][body.aggregation]
                items = bucket_rows(body.aggregation, result)
                more = isinstance(result, dict) and (result.get("sum_other_doc_count") or 0) > 0
            else:
                items = [{"_id": hit.get("_id"), **(hit.get("_source") or {})} for hit in reply["hits"]["hits"]]
                more = _total_hits(reply["hits"]) > len(items)
        except (KeyError, TypeError):
            what = f"aggregation '{body.aggregation}'" if body.aggregation else "hits"
            raise QueryFailed(self.name, f"template '{template.id}': the reply has no {what}") from None
        rows, columns, truncated = map_rows(items, mapping, cap)
        # an answer cut by the body's own `size` (or a terms aggregation's) says so: the reply counts the rest
        return QueryResult(rows=rows, columns=columns, truncated=truncated or (answer and more))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": "elasticsearch"}
