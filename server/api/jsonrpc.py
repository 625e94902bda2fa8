"""The JSON-RPC 2.0 envelope of a message POSTed to /mcp, as one model: server/mcp/envelope.py checks a
body with it before the MCP SDK sees the message, and the OpenAPI document describes /mcp's body with its
schema, so what the document calls valid is what the server lets through to the SDK.

Only the envelope: what a method's `params` must hold is the MCP specification's business (the SDK
answers a bad one with a JSON-RPC error). TypedDicts, not models: a member is either absent or of its
type (never null where JSON-RPC does not allow it), and members the envelope does not know are kept.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, StrictInt, StrictStr, TypeAdapter, ValidationError, with_config
from pydantic.config import JsonDict
from typing_extensions import TypedDict  # pydantic reads typing's TypedDict only from Python 3.12

# JSON-RPC 2.0: a request has a method, a response a result or an error (JSON Schema cannot say this with
# required members alone, hence the anyOf)
_ONE_OF_THE_THREE: JsonDict = {"anyOf": [{"required": ["method"]}, {"required": ["result"]}, {"required": ["error"]}]}


@with_config(ConfigDict(extra="allow"))
class JsonRpcErrorObject(TypedDict):
    code: StrictInt
    message: StrictStr
    data: NotRequired[Any]


@with_config(ConfigDict(extra="allow", json_schema_extra=_ONE_OF_THE_THREE))
class JsonRpcMessage(TypedDict):
    """One JSON-RPC 2.0 message: a request (`method`, `id`), a notification (`method`, no `id`) or a
    response (`result` or `error`). Batches (arrays) are not accepted."""

    jsonrpc: Literal["2.0"]
    id: NotRequired[StrictStr | StrictInt | None]
    method: NotRequired[StrictStr]
    params: NotRequired[dict[str, Any]]
    result: NotRequired[Any]
    error: NotRequired[JsonRpcErrorObject]


class JsonRpcErrorResponse(TypedDict):
    """A JSON-RPC error answer: what /mcp sends with a 4xx when the message cannot be handled."""

    jsonrpc: Literal["2.0"]
    id: StrictStr | StrictInt | None
    error: JsonRpcErrorObject


MESSAGE = TypeAdapter(JsonRpcMessage)


def message_problem(message: Any) -> str | None:
    """None when `message` is one JSON-RPC 2.0 message; otherwise what is wrong, naming the member but
    never repeating a value."""
    if isinstance(message, list):
        return "one JSON-RPC message object per request (no batches)"
    if not isinstance(message, dict):
        return "a JSON-RPC message is a JSON object"
    try:
        MESSAGE.validate_python(message, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        member = str(first["loc"][0]) if first["loc"] else "message"
        if member == "jsonrpc":
            return '"jsonrpc" must be "2.0"'
        return f'"{member}" is missing' if first["type"] == "missing" else f'"{member}" is not valid'
    if not any(key in message for key in ("method", "result", "error")):
        return 'a "method" (or a "result" or "error") is required'
    return None
