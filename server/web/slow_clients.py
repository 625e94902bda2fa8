"""Slow clients: a connection that trickles its request headers is closed after `server.header_timeout`.

aiohttp has no header read timeout: its keep-alive timer (an hour by default) was the only thing that
ever closed a connection sending a byte a second. `GuardedRequestHandler` arms a timer when a
connection opens and when the first byte of a new request arrives on an idle keep-alive connection;
a complete header block disarms it, and if it fires first the connection is closed. The body has its
own bound (`server.body_timeout`, in request_body.py's middleware), and an idle keep-alive connection
is closed after `server.keepalive_timeout`. The timeouts are read from the current runtime on each
connection, so a reload changes them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse
from aiohttp.web_server import Server

from ..runtime.holder import RuntimeHolder
from .protocol_errors import protocol_error_response


@dataclass(frozen=True)
class ReadTimeouts:
    header: float
    keepalive: float


def read_timeouts(holder: RuntimeHolder) -> ReadTimeouts:
    """The current runtime's `server.header_timeout` and `server.keepalive_timeout`."""
    server = holder.current.config.app.server
    return ReadTimeouts(header=server.header_timeout, keepalive=server.keepalive_timeout)


class GuardedRequestHandler(RequestHandler):
    """aiohttp's handler plus a header read timeout (see the module docstring)."""

    def __init__(self, manager: Server, timeouts: Callable[[], ReadTimeouts], **kwargs: Any) -> None:
        current = timeouts()
        super().__init__(manager, keepalive_timeout=current.keepalive, **kwargs)
        self._header_timeout = current.header
        self._header_timer: asyncio.TimerHandle | None = None
        self._requests_when_armed = 0

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> StreamResponse:
        """A request aiohttp could not parse: JSON like every other error (protocol_errors.py)."""
        if request.writer.output_size > 0:  # part of an answer is out: only closing is left
            return super().handle_error(request, status, exc, message)
        return protocol_error_response(request, status, exc)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()  # a connection that sends nothing, or only part of a header, is closed in time

    def data_received(self, data: bytes) -> None:
        waiting = self._waiter
        idle = self._request_count == 0 or (waiting is not None and not waiting.done())
        before = self._request_count
        super().data_received(data)
        if self._request_count > before:
            self._disarm()  # a complete header block arrived
        elif idle and self._header_timer is None and data:
            self._arm()  # the first bytes of the next request on a keep-alive connection

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._requests_when_armed = self._request_count
        self._header_timer = self._loop.call_later(self._header_timeout, self._header_timed_out)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self._request_count == self._requests_when_armed:
            self.log_debug("closing a connection: no complete request header in %s s", self._header_timeout)
            self.force_close()


class GuardedServer(Server):
    """aiohttp's Server whose connections use GuardedRequestHandler."""

    def __init__(self, *args: Any, timeouts: Callable[[], ReadTimeouts], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timeouts = timeouts

    def __call__(self) -> RequestHandler:
        return GuardedRequestHandler(self, self._timeouts, loop=self._loop, **self._kwargs)


class GuardedAppRunner(web.AppRunner):
    """web.AppRunner serving through GuardedServer (the app's startup, handler and kwargs unchanged)."""

    def __init__(self, app: web.Application, timeouts: Callable[[], ReadTimeouts], **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._timeouts = timeouts

    async def _make_server(self) -> Server:
        plain = await super()._make_server()
        return GuardedServer(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=plain._loop,
            timeouts=self._timeouts,
            **plain._kwargs,
        )
