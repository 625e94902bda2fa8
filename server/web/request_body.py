"""Reading request bodies: every way a body can fail to decode is the client's mistake, so a 400.

The middleware reads the whole body (aiohttp's client_max_size bounds it) before any handler runs:
a body that claims a Content-Encoding it does not have, or names a charset that does not exist,
is answered 400 here, before a handler or the routing log sees the request. A body that does not
arrive within `server.body_timeout` is answered 408 and its connection closed (before
`request_timeout` starts). Without it aiohttp
raised the decoding error inside the handler (a 500) or, for a handler that never read the body,
while draining it after the response (an unhandled-exception traceback in the log). A client that
hangs up before its body is complete is logged at INFO: nobody is left to answer.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from ..errors import BadRequest, IntentRouterError

log = logging.getLogger("intent_router.web")

# seconds the whole body may take to arrive (server.body_timeout of the current runtime); set by create_app
BODY_TIMEOUT: web.AppKey[Callable[[], float]] = web.AppKey("body_timeout")
DECODED = frozenset({"identity", "gzip", "deflate"})  # the content codings a body may come in
UNSUPPORTED_ENCODING = "Content-Encoding not supported (send gzip, deflate or none)"  # also protocol_errors.py
MAX_BODY_BYTES = 64 * 1024  # the app's client_max_size: a question, its options and a session id fit many times


@web.middleware
async def body_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    if request.can_read_body:
        if (request.content_length or 0) > MAX_BODY_BYTES:  # at once, not after waiting for the body
            request.content.feed_eof()
            return _closing(
                IntentRouterError(
                    f"request body larger than {MAX_BODY_BYTES} bytes", code="payload_too_large", status=413
                )
            )
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in DECODED:  # aiohttp would pass an unknown coding through as if it were none
            request.content.feed_eof()
            return _closing(IntentRouterError(UNSUPPORTED_ENCODING, code="unsupported_media_type", status=415))
        charset = request.charset
        if charset is not None and not _known_charset(charset):
            raise BadRequest("Content-Type: unknown charset")
        seconds = request.app[BODY_TIMEOUT]() if BODY_TIMEOUT in request.app else None
        try:
            async with asyncio.timeout(seconds):  # a body trickled in slowly must not hold the connection
                await request.read()  # cached: request.json()/post()/read() later use these bytes
        except TimeoutError:
            request.content.feed_eof()
            return _closing(
                IntentRouterError(f"request body not received within {seconds:g} s", code="body_timeout", status=408)
            )
        except ConnectionResetError:
            # the client hung up before its body was complete: nobody is left to answer, nothing went wrong here
            log.info("client closed the connection before sending its body (%s %s)", request.method, request.path)
            request.content.feed_eof()
            return _closing(BadRequest("request body incomplete: the connection was closed"))
        except (RequestPayloadError, HttpProcessingError):
            # the stream is broken: mark it ended so aiohttp does not read on after the answer (it would
            # meet the same error and log it as unhandled), and close the connection
            request.content.feed_eof()
            return _closing(BadRequest("request body cannot be decoded (does it match its Content-Encoding?)"))
    return await handler(request)


def _closing(error: IntentRouterError) -> web.Response:
    """The error's JSON answer, with the connection closed after it (its body stream cannot be trusted)."""
    response = web.json_response(error.to_json(), status=error.status)
    response.force_close()
    return response


def _known_charset(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True


async def read_json(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object; anything else (not JSON, not text in its charset, nested too deep
    for the parser) is a 400."""
    try:
        # a byte-order mark before the JSON (some Windows tools write one) is no error
        data = json.loads((await request.text()).removeprefix("\ufeff"))
    except (ValueError, UnicodeDecodeError, RecursionError, LookupError):  # JSONDecodeError is a ValueError
        raise BadRequest("request body must be JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    return data


async def read_form(request: web.Request) -> dict[str, str]:
    """A urlencoded or multipart form's text fields; a body that is not text in its charset is a 400."""
    try:
        form = await request.post()
    except (ValueError, UnicodeDecodeError, LookupError):
        raise BadRequest("form body must be text in its charset (UTF-8 unless stated)") from None
    return {name: value for name, value in form.items() if isinstance(value, str)}
