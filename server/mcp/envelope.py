"""The JSON-RPC envelope of a message POSTed to /mcp, checked before the MCP SDK sees it: the SDK's own
validation errors quote the message's values back (and name pydantic's error pages), which the server
never does with a client's input, and it answers a body that is not JSON with plain text. What passes
here is one JSON-RPC 2.0 message (api/jsonrpc.py, the schema /openapi.json shows for /mcp) in a JSON
body, which the SDK can judge itself."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from ..api.jsonrpc import message_problem

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def envelope_error(body: bytes, content_type: str = "application/json") -> web.Response | None:
    """None when `body` is one JSON-RPC 2.0 message sent as JSON; otherwise the JSON-RPC error answer
    (415 for another media type, 400 otherwise) that says what is wrong without repeating it."""
    if content_type != "application/json":
        return _error(INVALID_REQUEST, "Invalid Request: send the message as Content-Type: application/json", 415)
    try:
        message: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _error(PARSE_ERROR, "Parse error: the body is not JSON")
    problem = message_problem(message)
    return _error(INVALID_REQUEST, f"Invalid Request: {problem}") if problem is not None else None


def _error(code: int, message: str, status: int = 400) -> web.Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return web.json_response(body, status=status)


def opens_session(body: bytes) -> bool:
    """The message is an `initialize` request: the only one that opens an MCP session (after envelope_error)."""
    try:
        message: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"
