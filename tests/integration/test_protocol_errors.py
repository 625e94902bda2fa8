"""Requests aiohttp cannot parse get the JSON error body like every other client mistake (not a plain-text
page echoing the raw request or naming a library to install), and no error traceback in the log."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from server.testing.configs import people_tree

from .test_slow_clients import serving

BODY = b'{"query": "who works in Engineering?", "adapter": "people"}'


async def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 5)  # the server closes the connection after the answer
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def post(extra_headers: str, body: bytes = BODY, length: str | None = None) -> bytes:
    size = length if length is not None else str(len(body))
    head = f"POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n"
    return (head + extra_headers + "\r\n").encode() + body


@pytest.mark.parametrize(
    ("name", "raw", "status", "code"),
    [
        ("brotli", post("Content-Encoding: br\r\n"), 415, "unsupported_media_type"),
        ("zstd", post("Content-Encoding: zstd\r\n"), 415, "unsupported_media_type"),
        ("unknown coding", post("Content-Encoding: foo\r\n"), 415, "unsupported_media_type"),
        ("two codings", post("Content-Encoding: gzip, br\r\n"), 415, "unsupported_media_type"),
        ("content-length not a number", post("", length="abc"), 400, "bad_request"),
        ("negative content-length", post("", length="-1"), 400, "bad_request"),
        ("length and chunked", post("Transfer-Encoding: chunked\r\n"), 400, "bad_request"),
        ("unknown method", b"FOO /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, "bad_request"),
        ("header line too long", post("X-Long: " + "a" * 9000 + "\r\n"), 431, "headers_too_large"),
    ],
)
async def test_unparsable_requests_get_json_errors(tmp_path, caplog, name, raw, status, code):
    caplog.set_level(logging.INFO)
    async with serving(people_tree(tmp_path)) as (port, _runner):
        got, headers, body = await exchange(port, raw)
        ok, _, answer = await exchange(port, post("Connection: close\r\n"))  # the server goes on serving
    assert got == status, name
    assert headers["content-type"].startswith("application/json")
    assert headers["server"] == "intent-router"  # found by a probe: aiohttp's name and version were sent
    error = json.loads(body)["error"]
    assert error["code"] == code and error["message"]
    assert b"aaaa" not in body and b"abc" not in body and b"Brotli" not in body and b"POST" not in body
    assert ok == 200 and json.loads(answer)["rows"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], name


async def test_a_method_the_path_does_not_take_is_405_with_allow(tmp_path):
    from server.testing.app import running_app

    async with running_app(people_tree(tmp_path)) as (client, _):
        resp = await client.put("/v1/query", json={"query": "x"})
        body = await resp.json()
    assert resp.status == 405 and body["error"]["code"] == "method_not_allowed"
    assert "POST" in {m.strip() for m in resp.headers["Allow"].split(",")}


async def test_a_body_announced_larger_than_the_limit_is_413_at_once(tmp_path):
    """A Content-Length over the limit is answered before any of the body is awaited (it used to wait
    for `server.body_timeout` and answer 408), and the connection is closed."""
    import time

    async with serving(people_tree(tmp_path)) as (port, _runner):
        started = time.monotonic()
        status, _headers, body = await exchange(port, post("", body=b"", length="10000000"))
        waited = time.monotonic() - started
    assert status == 413 and json.loads(body)["error"]["code"] == "payload_too_large"
    assert waited < 2
