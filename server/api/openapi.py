"""The OpenAPI 3.1 document of the HTTP API (`GET /openapi.json`), generated from the pydantic models the
handlers validate and serialise with, so the contract cannot drift from the code.

Only the operation table below (path, method, which models, which error statuses, which auth) is
written here; every schema comes from `models_json_schema` with its `$defs` hoisted into
`components/schemas`. An endpoint that starts returning a new status must say so in its row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .requests import CatalogueQuery, QueryRequest, ReloadQuery, StatisticsQuery, TestRoutingRequest
from .responses import (
    Catalogue,
    ClusterResponse,
    ErrorResponse,
    HealthResponse,
    LoadStatusView,
    QueryResponse,
    RoutingExplanation,
    StatisticsResponse,
)

Json = dict[str, Any]
REF = "#/components/schemas/{model}"
OPENAPI_VERSION = "3.1.0"
VERSION = "0.1.0"  # pyproject.toml's

ERROR_TEXT = {
    400: "Bad request: the body is not a JSON object, a field is missing or invalid, or a query parameter is wrong",
    401: "No API key, or an unknown one (only when `auth` configures keys)",
    403: "The key's role or adapter list does not allow this",
    404: "Unknown adapter",
    408: "The request body did not arrive within `server.body_timeout` (`body_timeout`; the connection is closed)",
    413: "Request body larger than 64 KiB",
    422: "The configuration was refused",
    429: "Too many requests",
    502: "The data source answered but the query failed (`query_failed`)",
    503: "The data source (or the routing log) cannot be reached (`source_unavailable`, `stats_unavailable`)",
    504: "The request or the source query timed out (`timeout`, `source_timeout`)",
}
SECURITY_SCHEMES: Json = {
    "bearerAuth": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <key>"},
    "apiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    "dashboardSession": {
        "type": "apiKey",
        "in": "cookie",
        "name": "ir_dashboard",
        "description": "the session cookie /dashboard/login sets for an admin or stats key",
    },
}
KEY_AUTH: tuple[Json, ...] = ({"bearerAuth": []}, {"apiKeyAuth": []})
STATS_AUTH: tuple[Json, ...] = (*KEY_AUTH, {"dashboardSession": []})
QUESTION_ERRORS = (400, 401, 403, 404, 408, 413, 502, 503, 504)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str
    summary: str
    description: str = ""
    request: type[BaseModel] | None = None  # a JSON body
    query: type[BaseModel] | None = None  # query-string parameters, one per field
    ok: type[BaseModel] | None = None  # the 200 body as JSON, else `ok_media`
    ok_media: str = "application/json"
    errors: tuple[int, ...] = ()  # statuses answered with ErrorResponse
    extra: tuple[tuple[int, str, type[BaseModel] | str], ...] = ()  # (status, description, model or media)
    security: tuple[Json, ...] = ()  # () = no key needed


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "post",
        "/v1/query",
        "query",
        "Answer a question",
        "Routes the question to one template, fills its parameters and runs it; or says what is missing "
        "(`needs_clarification`), that two templates are too close (`ambiguous`) or that nothing matches.",
        request=QueryRequest,
        ok=QueryResponse,
        errors=QUESTION_ERRORS,
        security=KEY_AUTH,
    ),
    Operation(
        "post",
        "/v1/test_routing",
        "testRouting",
        "Explain the routing of a question",
        "Every candidate with its scores and the decision; nothing runs on a data source. Each candidate "
        'shows its first example only unless `"detail": "full"`.',
        request=TestRoutingRequest,
        ok=RoutingExplanation,
        errors=QUESTION_ERRORS,
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/v1/templates",
        "listTemplates",
        "The template catalogue",
        "Per adapter the templates a key may query, with example questions and parameters as JSON Schema.",
        query=CatalogueQuery,
        ok=Catalogue,
        errors=(400, 401, 403, 404),
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/v1/routing/statistics",
        "routingStatistics",
        "Routing statistics",
        "The adapter's description, figures from the routing log over a window, and the config status "
        "(a stats or admin key).",
        query=StatisticsQuery,
        ok=StatisticsResponse,
        errors=(400, 401, 403, 404, 503),
        security=STATS_AUTH,
    ),
    Operation(
        "get",
        "/health",
        "health",
        "Liveness of every adapter and of the configuration",
        "With auth on, without a key only `status` is answered; the details need a valid key (any role).",
        ok=HealthResponse,
        errors=(401,),
        security=({}, *KEY_AUTH),
    ),
    Operation(
        "post",
        "/admin/reload",
        "reload",
        "Reload the configuration now",
        "The new configuration serves only if it loads completely and keeps what clients use (see "
        "`allow_removal`) and the start's auth rules; otherwise the old one keeps serving and the answer is 422 "
        "with the errors (file:line).",
        query=ReloadQuery,
        ok=LoadStatusView,
        errors=(400, 401, 403),
        extra=((422, ERROR_TEXT[422], LoadStatusView),),
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/v1/cluster",
        "cluster",
        "The replicas of this deployment",
        "With cluster.enabled: the replicas seen within three heartbeats, each with its config hash, uptime and "
        "load (admin key). With the bus engine down only the answering replica is listed.",
        ok=ClusterResponse,
        errors=(401, 403),
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/metrics",
        "metrics",
        "Prometheus metrics",
        "The Prometheus text exposition format (a stats or admin key).",
        ok_media="text/plain",
        errors=(401, 403),
        security=KEY_AUTH,
    ),
    Operation(
        "get",
        "/dashboard",
        "dashboard",
        "The routing dashboard (HTML)",
        "Without a session or key it redirects to /dashboard/login; a key without the stats role sees the "
        "login page with a 403.",
        ok_media="text/html",
        extra=((303, "Redirect to /dashboard/login", "text/html"), (403, "Login page: not a stats key", "text/html")),
        security=STATS_AUTH,
    ),
    Operation("get", "/openapi.json", "openapi", "This document", ok_media="application/json"),
    Operation("get", "/docs", "docs", "A readable page over this document (HTML)", ok_media="text/html"),
)


def _body(media: str, schema: Json | None) -> Json:
    return {media: {"schema": schema} if schema is not None else {}}


def _not_null(schema: Json) -> Json:
    """A query parameter is absent or a string, never null: `X | None` becomes X."""
    branches = [b for b in schema.get("anyOf", ()) if b != {"type": "null"}]
    return branches[0] if len(branches) == 1 and len(schema) == 1 else schema


def _parameters(shape: Json) -> list[Json]:
    required = set(shape.get("required", ()))
    params = []
    for name, field in shape.get("properties", {}).items():
        schema = _not_null({k: v for k, v in field.items() if k not in ("title", "description", "default")})
        param: Json = {"name": name, "in": "query", "required": name in required, "schema": schema}
        if "description" in field:
            param["description"] = field["description"]
        params.append(param)
    return params


def _operation(op: Operation, schemas: dict[tuple[type[BaseModel], str], Json]) -> Json:
    out: Json = {"operationId": op.operation_id, "summary": op.summary}
    if op.description:
        out["description"] = op.description
    if op.query is not None:
        out["parameters"] = _parameters(op.query.model_json_schema(ref_template=REF))
    if op.request is not None:
        out["requestBody"] = {
            "required": True,
            "content": _body("application/json", schemas[(op.request, "validation")]),
        }
    ok_schema = schemas[(op.ok, "serialization")] if op.ok is not None else None
    responses: Json = {"200": {"description": "OK", "content": _body(op.ok_media, ok_schema)}}
    for status, text, shape in op.extra:
        if isinstance(shape, str):
            responses[str(status)] = {"description": text, "content": _body(shape, None)}
        else:
            schema = schemas[(shape, "serialization")]
            responses[str(status)] = {"description": text, "content": _body("application/json", schema)}
    error_ref = schemas[(ErrorResponse, "serialization")]
    for status in op.errors:
        responses[str(status)] = {"description": ERROR_TEXT[status], "content": _body("application/json", error_ref)}
    out["responses"] = dict(sorted(responses.items()))
    out["security"] = list(op.security)
    return out


def _models(operations: tuple[Operation, ...]) -> list[tuple[type[BaseModel], str]]:
    wanted: list[tuple[type[BaseModel], str]] = [(ErrorResponse, "serialization")]
    for op in operations:
        wanted += [(op.request, "validation")] if op.request is not None else []
        wanted += [(m, "serialization") for m in (op.ok, *(s for _, _, s in op.extra)) if isinstance(m, type)]
    return list(dict.fromkeys(wanted))


def build_openapi(version: str = VERSION, operations: tuple[Operation, ...] = OPERATIONS) -> Json:
    """The whole document: paths from `operations`, components from their models."""
    keyed, top = models_json_schema(_models(operations), ref_template=REF)  # type: ignore[arg-type]
    schemas: dict[tuple[type[BaseModel], str], Json] = dict(keyed)  # type: ignore[arg-type]
    defs = top.get("$defs", {})
    paths: Json = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method] = _operation(op, schemas)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Intent Router",
            "version": version,
            "description": "Routes a natural-language question to one query template and runs it. "
            "With `auth` keys configured, send a key as `Authorization: Bearer <key>` or `X-API-Key`; "
            "without keys the server listens on loopback only and asks for none. Errors are "
            '`{"error": {"code", "message"}}`.',
        },
        "paths": paths,
        "components": {"schemas": defs, "securitySchemes": SECURITY_SCHEMES},
    }
