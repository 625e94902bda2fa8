"""Requests that fail before the app sees them (malformed request line or headers, a Content-Length that
is not a number, a header line too long, a Content-Encoding aiohttp cannot decode) get the JSON error body
every other client mistake gets, never aiohttp's plain-text page that echoes the raw request bytes or
names a library to install; they are logged as one line, not as an error with a traceback."""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.http_exceptions import ContentEncodingError, LineTooLong

from ..errors import error_body
from .request_body import UNSUPPORTED_ENCODING

log = logging.getLogger("intent_router.http")

_CODES = {400: "bad_request", 413: "payload_too_large", 415: "unsupported_media_type", 431: "headers_too_large"}


def protocol_error_response(request: web.BaseRequest, status: int, exc: BaseException | None) -> web.Response:
    """The JSON answer to a request aiohttp could not parse (the connection is closed after it)."""
    if isinstance(exc, ContentEncodingError):
        status, message = 415, UNSUPPORTED_ENCODING
    elif isinstance(exc, LineTooLong):
        status, message = 431, "request line or a header is too long"
    elif status >= 500:
        message = "internal server error"
    else:
        message = "malformed HTTP request"
    if status >= 500:
        log.error("error handling a request from %s", request.remote, exc_info=exc)
    else:
        log.info("%d from %s: %s (%s)", status, request.remote, message, type(exc).__name__ if exc else "-")
    response = web.json_response(
        error_body(_CODES.get(status, "internal_error" if status >= 500 else "bad_request"), message), status=status
    )
    response.headers["Server"] = "intent-router"  # as on every answer (app.py), not aiohttp's name and version
    response.force_close()
    return response
