"""HTTP JSON API adapter: a templated request (method, path, query, headers, JSON body) mapped to rows.

Path parameters are whole path segments, percent-encoded so that a value is always exactly one
segment (`../` cannot climb); query parameters go through the client's query encoding; the JSON body
is a parsed structure with typed placeholders. Nothing is formatted into text.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from yarl import URL

from ..config.parsed_body import ParsedBody
from ..errors import QueryFailed
from ..templates import Template
from .base import DataAdapterSettings, QueryResult
from .json_rows import MissingItems, ResponseMapping, extract_items, map_rows
from .placeholders import Placeholder, literal_value, parse_structure, render, static_value
from .web_client import WebAPIAdapter, WebConnection

_SEGMENT_PARAM = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@%-]*$")


class HTTPAdapterSettings(DataAdapterSettings):
    connection: WebConnection = Field(description="the HTTP API")


class HTTPBody(BaseModel):
    """The `http:` block of a template; `path` segments are literal text or a whole `{{name}}`."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    method: Literal["GET", "POST"] = "GET"
    path: list[str | Placeholder]
    query: dict[str, Any] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    response: ResponseMapping = Field(default_factory=ResponseMapping)

    @field_validator("path", mode="before")
    @classmethod
    def _segments(cls, raw: Any) -> list[str | Placeholder]:
        if not isinstance(raw, str) or not raw.startswith("/"):
            raise ValueError("path must be a string starting with '/'")
        segments: list[str | Placeholder] = []
        for segment in raw[1:].split("/"):
            match = _SEGMENT_PARAM.match(segment)
            if match:
                segments.append(Placeholder(match.group(1)))
            elif "{{" in segment or "}}" in segment:
                raise ValueError(f"a path placeholder must be a whole segment such as /cars/{{{{id}}}} ({segment!r})")
            elif segment in {".", ".."} or not _SAFE_SEGMENT.match(segment):
                raise ValueError(f"path segment {segment!r} is not allowed (no '..', '?', '#' or spaces)")
            else:
                segments.append(segment)
        return segments

    @model_validator(mode="after")
    def _body_only_for_post(self) -> HTTPBody:
        if self.body is not None and self.method != "POST":
            raise ValueError("a JSON body needs method POST")
        return self


def parse_http_body(raw: Any) -> ParsedBody:
    if not isinstance(raw, dict):
        raise ValueError("http must be a mapping with method, path, query, headers, body, response")
    rest = {k: v for k, v in raw.items() if k != "path"}
    parsed = parse_structure(rest, "http")
    static_value(parsed.value.get("headers"), "http.headers")
    static_value(parsed.value.get("response"), "http.response")
    static_value(parsed.value.get("method"), "http.method")
    for key, value in (parsed.value.get("query") or {}).items():
        if isinstance(value, dict | list) and not isinstance(value, Placeholder):
            raise ValueError(f"http.query.{key}: a query value is a single value or a placeholder")
    try:
        body = HTTPBody.model_validate({**parsed.value, "path": raw.get("path")})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"http{'.' + where if where else ''}: {first['msg'].removeprefix('Value error, ')}") from None
    names = set(parsed.placeholders) | {s.name for s in body.path if isinstance(s, Placeholder)}
    return ParsedBody(body, frozenset(names))


def encode_segment(name: str, value: Any) -> str:
    """One path segment: every reserved character percent-encoded, and dot-only values too."""
    value = literal_value(name, value)
    if value is None or isinstance(value, list) or value == "":
        raise ValueError(f"path parameter '{name}' needs a single non-empty value")
    text = "true" if value is True else "false" if value is False else str(value)
    encoded = quote(text, safe="")
    return encoded.replace(".", "%2E") if set(text) == {"."} else encoded


def query_pairs(query: dict[str, Any], params: dict[str, Any]) -> list[tuple[str, str]]:
    """Query items as (name, text) pairs: lists repeat the name, absent values are left out."""
    pairs: list[tuple[str, str]] = []
    for key, value in render(query, params).items():
        for item in value if isinstance(value, list) else [value]:
            if item is None:
                continue
            pairs.append((key, "true" if item is True else "false" if item is False else str(item)))
    return pairs


class HTTPAdapter(WebAPIAdapter):
    type_name = "http"
    settings_model = HTTPAdapterSettings
    body_key: ClassVar[str] = "http"

    settings: HTTPAdapterSettings

    @classmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        return parse_http_body(raw)

    def render_request(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> dict[str, Any]:
        """Method, URL, query pairs, headers and JSON body exactly as they will be sent."""
        body: HTTPBody = template.body
        segments = [encode_segment(s.name, params.get(s.name)) if isinstance(s, Placeholder) else s for s in body.path]
        base = self.settings.connection.url.rstrip("/")
        url = URL(base + "/" + "/".join(segments), encoded=True)
        return {
            "method": body.method,
            "url": url,
            "query": query_pairs(body.query, params),
            "headers": dict(body.headers),
            "body": render(body.body, params),
        }

    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        request = self.request_for(template, params)
        reply = await self.client.call(
            request["method"],
            request["url"],
            query=request["query"],
            body=request["body"],
            headers=request["headers"],
            timeout=self.settings.query_timeout,
        )
        mapping: ResponseMapping = template.body.response
        try:
            items = extract_items(reply.data, mapping.items_path)
        except MissingItems:
            raise QueryFailed(
                self.name, f"template '{template.id}': the reply has nothing at items_path '{mapping.items_path}'"
            ) from None
        rows, columns, truncated = map_rows(items, mapping, self.row_cap(max_rows))
        return QueryResult(rows=rows, columns=columns, truncated=truncated)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": "http", "url": self.settings.connection.url}
