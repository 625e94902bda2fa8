"""Slow clients (issue 12 item 7): a connection trickling its headers or its body is closed after
`server.header_timeout` / `server.body_timeout`, and the server holds no descriptor for it afterwards.

The app runs as `serve` runs it (GuardedAppRunner on a loopback TCP site); the clients are raw sockets
sending a few bytes at a time, like a slowloris.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextlib import asynccontextmanager

from aiohttp import web

from server.runtime.holder import RuntimeHolder
from server.testing.configs import BASE_CONFIG, people_tree
from server.web.app import create_app
from server.web.routing_log import STATS_LOG
from server.web.slow_clients import GuardedAppRunner, read_timeouts

CONFIG = BASE_CONFIG + "server: {header_timeout: 1, body_timeout: 1, keepalive_timeout: 30}\n"


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@asynccontextmanager
async def serving(config_dir):
    holder = RuntimeHolder(config_dir)
    await holder.start()
    runner = GuardedAppRunner(create_app(holder), lambda: read_timeouts(holder), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield port, runner
    finally:
        await runner.cleanup()
        await holder.close()


async def trickle(writer: asyncio.StreamWriter, reader: asyncio.StreamReader, data: bytes, every: float, limit: float):
    """Send `data` a byte at a time; returns (seconds until the server closed, bytes it answered) or None."""
    start = time.monotonic()
    reading = asyncio.ensure_future(reader.read())  # until EOF: the server's answer, if any, then the close
    for byte in data:
        if reading.done() or time.monotonic() - start > limit:
            break
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except (ConnectionError, OSError):
            break
        await asyncio.sleep(every)
    try:
        answer = await asyncio.wait_for(reading, max(0.1, limit - (time.monotonic() - start)))
    except TimeoutError:
        return None
    except ConnectionResetError:  # a byte written after the server closed made the kernel reset: it closed
        return time.monotonic() - start, b""
    return time.monotonic() - start, answer


async def test_trickled_headers_and_body_are_closed_and_descriptors_return(tmp_path):
    async with serving(people_tree(tmp_path, CONFIG)) as (port, runner):
        await runner.app[STATS_LOG].ready()  # the routing log opens its file (3 descriptors) just after start
        baseline = open_fds()

        headers = b"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + b"X: y\r\n" * 50
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        closed = await trickle(writer, reader, headers, every=0.2, limit=6)
        writer.close()
        assert closed is not None, "a connection trickling its headers was still open after 6 s"
        seconds, answer = closed
        assert 0.9 <= seconds <= 4 and answer == b""

        body = json.dumps({"query": "who works in Engineering?"}).encode()
        head = (
            f"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head)
        closed = await trickle(writer, reader, body, every=0.2, limit=6)
        writer.close()
        assert closed is not None, "a connection trickling its body was still open after 6 s"
        seconds, answer = closed
        assert seconds <= 4
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line == b"HTTP/1.1 408 Request Timeout"
        payload = json.loads(rest.split(b"\r\n\r\n", 1)[1])
        assert payload == {"error": {"code": "body_timeout", "message": "request body not received within 1 s"}}

        deadline = time.monotonic() + 3
        while (open_fds() > baseline or runner.server.connections) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert open_fds() <= baseline
        assert runner.server.connections == []

        # a client that sends its request at once is served as before
        ok_reader, ok_writer = await asyncio.open_connection("127.0.0.1", port)
        ok_writer.write(head + body)
        await ok_writer.drain()
        status = await asyncio.wait_for(ok_reader.readline(), 30)
        ok_writer.close()
    assert status.startswith(b"HTTP/1.1 200")


async def test_keep_alive_connection_trickling_its_next_request_is_closed(tmp_path):
    async with serving(people_tree(tmp_path, CONFIG)) as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 10)
        assert status.startswith(b"HTTP/1.1 200")
        while (await asyncio.wait_for(reader.readline(), 10)) != b"\r\n":
            pass
        length_known = await asyncio.wait_for(reader.read(65536), 10)  # the body
        assert length_known
        closed = await trickle(
            writer, reader, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X: y\r\n" * 50, 0.2, 6
        )
        writer.close()
    assert closed is not None, "a keep-alive connection trickling its second request stayed open"
    assert closed[0] <= 4


async def test_a_client_that_hangs_up_mid_body_is_no_server_error(tmp_path, caplog):
    """A client gone before its body is complete is a normal event: no error with a traceback in the log,
    and the server answers the next client."""
    async with serving(people_tree(tmp_path, CONFIG)) as (port, _):
        for framing in (b"Content-Length: 100\r\n", b"Transfer-Encoding: chunked\r\n"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            head = b"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + framing
            writer.write(head + b"\r\n" + (b'{"query":' if b"Length" in framing else b'9\r\n{"query":\r\n'))
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.close()
            await writer.wait_closed()
        await asyncio.sleep(0.3)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = json.dumps({"query": "who works in the Engineering department?"}).encode()
        writer.write(
            b"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        answer = await reader.read()
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200")
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
