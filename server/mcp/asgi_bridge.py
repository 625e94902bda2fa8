"""Run an ASGI application for one aiohttp request (the MCP SDK's streamable HTTP transport is ASGI).

The request body is read by aiohttp (so its size limit applies) and handed over in one message;
response start and body messages become an aiohttp StreamResponse that is sent as it is written,
which keeps server-sent event streams streaming. `http.disconnect` is reported once the response is
finished or the client has gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any

from aiohttp import web

Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Coroutine[Any, Any, None],
]
DISCONNECT_POLL_SECONDS = 0.25
_BACKGROUND: set[asyncio.Task] = set()
log = logging.getLogger("intent_router.mcp")


def _settled(task: asyncio.Task) -> None:
    _BACKGROUND.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("MCP request failed after its response was sent: %r", task.exception())


def build_scope(request: web.Request, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    sock = transport.get_extra_info("sockname") if transport is not None else None
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        "server": tuple(sock[:2]) if isinstance(sock, tuple) else None,
        "state": {},
    }
    scope.update(extra or {})
    return scope


async def call_asgi(
    app: ASGIApp, request: web.Request, extra_scope: dict[str, Any] | None = None
) -> web.StreamResponse:
    body = await request.read()  # aiohttp's client_max_size applies (413)
    scope = build_scope(request, extra_scope)
    finished = asyncio.Event()
    body_sent = False
    response: web.StreamResponse | None = None

    async def receive() -> Message:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        # a plain sleep loop: asyncio.wait_for can swallow the cancellation of an anyio cancel scope
        # (the SDK's event-stream responses cancel this wait when they finish)
        while not finished.is_set():
            transport = request.transport
            if transport is None or transport.is_closing():
                break
            await asyncio.sleep(DISCONNECT_POLL_SECONDS)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        kind = message["type"]
        if kind == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(request)
        elif kind == "http.response.body":
            if response is None:
                raise RuntimeError("ASGI app sent a body before starting the response")
            chunk = message.get("body", b"")
            if chunk:
                await response.write(chunk)
            if not message.get("more_body", False):
                await response.write_eof()
                finished.set()

    # The app runs in a task of its own: when the client closes the connection right after a complete
    # response (aiohttp may then cancel this handler), the SDK still finishes its bookkeeping, e.g.
    # registering the session that response opened. A client gone mid-response cancels the app.
    task = asyncio.get_running_loop().create_task(app(scope, receive, send), name="asgi-request")
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        if finished.is_set() and not task.done():
            _BACKGROUND.add(task)
            task.add_done_callback(_settled)
        else:
            task.cancel()
        raise
    finally:
        finished.set()
    if response is None:
        raise web.HTTPInternalServerError(reason="no response")
    return response
