"""The OpenAPI 3.1 document of the HTTP API (`GET /openapi.json`), generated from the pydantic models the
handlers validate and serialise with, so the contract cannot drift from the code.

The operation table (operations.py) names the models and statuses of each route; every schema comes from
pydantic (`TypeAdapter.json_schemas`) with its `$defs` hoisted into `components/schemas`. A server with
keys gets the security schemes and the statuses only keys cause; one without keys gets neither.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from .operations import (
    ERROR_TEXT,
    OPERATIONS,
    SECURITY_SCHEMES,
    Header,
    Json,
    Operation,
    Reply,
    Shape,
)
from .responses import ErrorResponse

__all__ = ["OPERATIONS", "REF", "build_openapi"]

REF = "#/components/schemas/{model}"
OPENAPI_VERSION = "3.1.0"
VERSION = "0.1.0"  # pyproject.toml's
# the server reads an empty query parameter as an absent one (web/query_string.py): so says the document
EMPTY_VALUE: Json = {"type": "string", "maxLength": 0}
EMPTY_NOTE = "An empty value is the same as leaving the parameter out."

Key = tuple[Any, JsonSchemaMode]


def _not_null(schema: Json) -> Json:
    """A query parameter is absent or a string, never null: `X | None` becomes X."""
    branches = [b for b in schema.get("anyOf", ()) if b != {"type": "null"}]
    return branches[0] if len(branches) == 1 and len(schema) == 1 else schema


def _parameters(op: Operation) -> list[Json]:
    params: list[Json] = []
    if op.query is not None:
        shape = op.query.model_json_schema(ref_template=REF)
        required = set(shape.get("required", ()))
        for name, field in shape.get("properties", {}).items():
            schema = _not_null({k: v for k, v in field.items() if k not in ("title", "description", "default")})
            described = field.get("description", "").rstrip(".")
            text = f"{described}. {EMPTY_NOTE}" if described else EMPTY_NOTE
            params.append(
                {
                    "name": name,
                    "in": "query",
                    "required": name in required,
                    "description": text,
                    "schema": {"anyOf": [schema, EMPTY_VALUE]},
                }
            )
    params += [_header(h) for h in op.headers]
    return params


def _header(header: Header) -> Json:
    return {
        "name": header.name,
        "in": "header",
        "required": header.required,
        "description": header.description,
        "schema": {"type": "string"},
    }


def _shapes(op: Operation, keys: bool) -> list[tuple[Shape, JsonSchemaMode]]:
    wanted: list[tuple[Shape, JsonSchemaMode]] = [(_request(op, keys), "validation")]
    wanted += [(op.ok, "serialization")]
    wanted += [(shape, "serialization") for reply in _replies(op, keys) for _, shape in reply.content]
    return [(shape, mode) for shape, mode in wanted if _generated(shape)]


def _request(op: Operation, keys: bool) -> Shape:
    return op.request if keys or not op.request_keys_only else None


def _replies(op: Operation, keys: bool) -> list[Reply]:
    return [r for r in op.replies if keys or not r.keys_only]


def _generated(shape: Shape) -> bool:
    """A type form pydantic makes the schema of (a model, a TypedDict, a union), not a literal schema or None."""
    return shape is not None and not isinstance(shape, dict)


def _schema(shape: Shape, mode: JsonSchemaMode, schemas: dict[Key, Json]) -> Json | None:
    return schemas[(shape, mode)] if _generated(shape) else shape


def _content(content: tuple[tuple[str, Shape], ...], schemas: dict[Key, Json]) -> Json:
    out: Json = {}
    for media, shape in content:
        schema = _schema(shape, "serialization", schemas)
        out[media] = {"schema": schema} if schema is not None else {}
    return out


def _response(description: str, content: Json, headers: tuple[tuple[str, str], ...] = ()) -> Json:
    out: Json = {"description": description}
    if headers:
        out["headers"] = {name: {"description": text, "schema": {"type": "string"}} for name, text in headers}
    if content:
        out["content"] = content
    return out


def _operation(op: Operation, schemas: dict[Key, Json], keys: bool) -> Json:
    out: Json = {"operationId": op.operation_id, "summary": op.summary}
    if op.description:
        out["description"] = op.description
    if params := _parameters(op):
        out["parameters"] = params
    if (request := _request(op, keys)) is not None:
        schema = schemas[(request, "validation")]
        out["requestBody"] = {"required": True, "content": {op.request_media: {"schema": schema}}}
    responses: Json = {}
    if op.ok_media:
        ok = _content(tuple((media, op.ok) for media in op.ok_media), schemas)
        responses["200"] = _response("OK", ok)
    for reply in _replies(op, keys):
        responses[str(reply.status)] = _response(reply.description, _content(reply.content, schemas), reply.headers)
    error = {"application/json": {"schema": schemas[(ErrorResponse, "serialization")]}}
    for status in (*op.errors, *(op.key_errors if keys else ())):
        responses[str(status)] = _response(ERROR_TEXT[status], error)
    out["responses"] = dict(sorted(responses.items()))
    if keys:
        out["security"] = list(op.security)
    return out


def build_openapi(keys: bool = True, version: str = VERSION, operations: tuple[Operation, ...] = OPERATIONS) -> Json:
    """The whole document: paths from `operations`, components from their models. `keys`: whether the
    server has API keys (auth configured); without, no operation asks for one or answers 401/403 for one."""
    wanted: list[tuple[Shape, JsonSchemaMode]] = [(ErrorResponse, "serialization")]
    for op in operations:
        wanted += _shapes(op, keys)
    inputs: list[tuple[Key, JsonSchemaMode, TypeAdapter[Any]]] = [
        ((shape, mode), mode, TypeAdapter(shape)) for shape, mode in dict.fromkeys(wanted) if _generated(shape)
    ]
    keyed, top = TypeAdapter.json_schemas(inputs, ref_template=REF)
    schemas: dict[Key, Json] = {key: schema for (key, _), schema in keyed.items()}
    paths: Json = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method] = _operation(op, schemas, keys)
    auth = (
        "Send a key as `Authorization: Bearer <key>` or `X-API-Key`."
        if keys
        else "This server has no API keys configured: it listens on loopback only and asks for none."
    )
    components: Json = {"schemas": top.get("$defs", {})}
    if keys:
        components["securitySchemes"] = SECURITY_SCHEMES
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Intent Router",
            "version": version,
            "description": "Routes a natural-language question to one query template and runs it. "
            + auth
            + ' Errors are `{"error": {"code", "message"}}`.',
        },
        "paths": paths,
        "components": components,
    }
