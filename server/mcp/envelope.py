"""The JSON-RPC envelope of a message POSTed to /mcp, checked before the MCP SDK sees it: the SDK's own
validation errors quote the message's values back (and name pydantic's error pages), which the server
never does with a client's input. What passes here is a JSON-RPC 2.0 object the SDK can judge itself."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def envelope_error(body: bytes) -> web.Response | None:
    """None when `body` is one JSON-RPC 2.0 message (a request, a notification or a response);
    otherwise the JSON-RPC error answer (HTTP 400) that says what is wrong without repeating it."""
    try:
        message: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _error(PARSE_ERROR, "Parse error: the body is not JSON")
    if not isinstance(message, dict):
        return _error(INVALID_REQUEST, "Invalid Request: one JSON-RPC message object per request (no batches)")
    if message.get("jsonrpc") != "2.0":
        return _error(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not isinstance(message.get("method"), str) and "result" not in message and "error" not in message:
        return _error(INVALID_REQUEST, 'Invalid Request: a "method" (or a "result" or "error") is required')
    request_id = message.get("id")
    if request_id is not None and not isinstance(request_id, str | int):
        return _error(INVALID_REQUEST, 'Invalid Request: "id" must be a string or a number')
    return None


def _error(code: int, message: str) -> web.Response:
    return web.json_response({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status=400)


def opens_session(body: bytes) -> bool:
    """The message is an `initialize` request: the only one that opens an MCP session (after envelope_error)."""
    try:
        message: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"
