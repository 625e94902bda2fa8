"""GraphQL adapter: a fixed, read-only query document; parameters travel only in `variables`.

The query text is parsed when the template loads (queries only: no mutations or subscriptions) and is
sent byte for byte as written; a parameter can only be a variable's value, never query text. An
`errors` list in a reply (even with HTTP 200 and partial data) is a clear error, not rows.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from yarl import URL

from ..config.parsed_body import ParsedBody
from ..errors import QueryFailed
from ..templates import Template
from .base import DataAdapterSettings, QueryResult
from .json_rows import MissingItems, ResponseMapping, extract_items, map_rows
from .placeholders import parse_structure, render, static_value
from .web_client import WebAPIAdapter, WebConnection

log = logging.getLogger("intent_router.adapters.graphql")


class GraphQLAdapterSettings(DataAdapterSettings):
    connection: WebConnection = Field(description="the GraphQL endpoint")


class GraphQLBody(BaseModel):
    """`response.items_path` is a dotted path inside the reply's `data`."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    query: str = Field(min_length=1)
    operation_name: str | None = None
    variables: dict[str, Any] = Field(default_factory=dict)
    response: ResponseMapping = Field(default_factory=ResponseMapping)


def parse_graphql_body(raw: Any) -> ParsedBody:
    from graphql import GraphQLSyntaxError, OperationDefinitionNode, OperationType, parse

    if not isinstance(raw, dict):
        raise ValueError("graphql must be a mapping with query, variables, response")
    query = raw.get("query")
    if not isinstance(query, str):
        raise ValueError("graphql.query must be a GraphQL query document (a string)")
    if "{{" in query or "$param" in query:
        raise ValueError("graphql.query cannot contain placeholders: pass parameters as variables")
    rest = {k: v for k, v in raw.items() if k != "query"}
    parsed = parse_structure(rest, "graphql")
    static_value(parsed.value.get("response"), "graphql.response")
    static_value(parsed.value.get("operation_name"), "graphql.operation_name")
    try:
        body = GraphQLBody.model_validate({**parsed.value, "query": query})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"graphql{'.' + where if where else ''}: {first['msg']}") from None
    try:
        document = parse(query)
    except GraphQLSyntaxError as exc:
        raise ValueError(f"graphql.query does not parse: {exc.message}") from None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if body.operation_name is not None:
        operations = [o for o in operations if o.name is not None and o.name.value == body.operation_name]
        if not operations:
            raise ValueError(f"graphql.query has no operation named '{body.operation_name}'")
    elif len(operations) != 1:
        raise ValueError("graphql.query must hold exactly one operation (or set operation_name)")
    operation = operations[0]
    if operation.operation is not OperationType.QUERY:
        raise ValueError(f"graphql templates are read-only: {operation.operation.value} is not allowed")
    declared = {v.variable.name.value for v in operation.variable_definitions or []}
    unknown = sorted(set(body.variables) - declared)
    if unknown:
        raise ValueError(f"graphql.variables {unknown} are not declared in the query")
    return ParsedBody(body, parsed.placeholders)


def error_summary(errors: Any) -> str:
    """Count and codes of GraphQL errors; the servers' messages go to the log only."""
    items = errors if isinstance(errors, list) else [errors]
    codes = sorted(
        {
            str(e["extensions"]["code"])
            for e in items
            if isinstance(e, dict) and isinstance(e.get("extensions"), dict) and "code" in e["extensions"]
        }
    )
    text = f"{len(items)} error{'s' if len(items) != 1 else ''}"
    return text + (f" (codes: {', '.join(codes)})" if codes else "")


class GraphQLAdapter(WebAPIAdapter):
    type_name = "graphql"
    settings_model = GraphQLAdapterSettings
    body_key: ClassVar[str] = "graphql"

    settings: GraphQLAdapterSettings

    @classmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        return parse_graphql_body(raw)

    def render_request(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> dict[str, Any]:
        """The JSON document POSTed: the query exactly as written, parameters only in `variables`."""
        body: GraphQLBody = template.body
        request: dict[str, Any] = {"query": body.query, "variables": render(body.variables, params)}
        if body.operation_name is not None:
            request["operationName"] = body.operation_name
        return request

    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        request = self.request_for(template, params)
        reply = await self.client.call(
            "POST",
            URL(self.settings.connection.url),
            body=request,
            timeout=self.settings.query_timeout,
            accept_error_json=True,
        )
        data = reply.data if isinstance(reply.data, dict) else {}
        if data.get("errors"):
            log.warning("graphql adapter %s template %s: errors %s", self.name, template.id, data["errors"])
            raise QueryFailed(
                self.name, f"template '{template.id}': the GraphQL server returned {error_summary(data['errors'])}"
            )
        if reply.status >= 300 or not isinstance(data.get("data"), dict):
            raise QueryFailed(self.name, f"template '{template.id}': the reply has no data (HTTP {reply.status})")
        mapping: ResponseMapping = template.body.response
        try:
            items = extract_items(data["data"], mapping.items_path)
        except MissingItems:
            raise QueryFailed(
                self.name, f"template '{template.id}': the reply has nothing at items_path '{mapping.items_path}'"
            ) from None
        rows, columns, truncated = map_rows(items, mapping, self.row_cap(max_rows))
        return QueryResult(rows=rows, columns=columns, truncated=truncated)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": "graphql", "url": self.settings.connection.url}
