"""Junk requests are a 4xx with the JSON error shape, never a 500, and never a routing `error` outcome:
odd dashboard cookies, a login form that is not UTF-8, JSON nested far too deep, an unknown charset,
a body that claims gzip but is not."""

from __future__ import annotations

import gzip
import json
import logging

import pytest

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree
from server.web.dashboard_auth import COOKIE
from server.web.routing_log import STATS_LOG

AUTH = (
    BASE_CONFIG
    + """
stats: {store_queries: true, flush_interval: 0.05}
auth:
  client_keys: [{name: chat, key_env: IR_IN_CHAT_KEY}]
  admin_key_env: IR_IN_ADMIN_KEY
  stats_key_env: IR_IN_STATS_KEY
"""
)
JSON = {"Content-Type": "application/json", "X-API-Key": "chat-key"}


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("IR_IN_CHAT_KEY", "chat-key")
    monkeypatch.setenv("IR_IN_ADMIN_KEY", "admin-key")
    monkeypatch.setenv("IR_IN_STATS_KEY", "stats-key")


async def logged_errors(client) -> int:
    await client.app[STATS_LOG].flush()
    resp = await client.get("/v1/routing/statistics?adapter=people", headers={"X-API-Key": "admin-key"})
    body = await resp.json()
    return body["routing_log"]["outcomes"].get("error", {}).get("count", 0)


def assert_json_error(status: int, body: dict, expected: int = 400) -> None:
    assert status == expected, body
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}


COOKIES = [
    "admin.²³.abc",  # isdigit() but not int()
    "admin.١٢٣٤٥٦٧٨٩٠.abc",  # Arabic-Indic digits: int() takes them
    "admin." + "9" * 5000 + "." + "0" * 64,  # beyond int()'s digit limit
    "stats.9999999999." + "é" * 64,  # non-ASCII MAC: compare_digest refuses str
    "admin.9999999999." + "0" * 64 + ".x",
    "",
]


@pytest.mark.parametrize("value", COOKIES, ids=range(len(COOKIES)))
async def test_odd_dashboard_cookies_are_no_session(tmp_path, keys, caplog, value):
    async with running_app(people_tree(tmp_path, AUTH)) as (client, _):
        with caplog.at_level(logging.ERROR):
            resp = await client.get("/v1/routing/statistics", cookies={COOKIE: value})
            assert_json_error(resp.status, await resp.json(), 401)
            page = await client.get("/dashboard", cookies={COOKIE: value}, allow_redirects=False)
            assert page.status == 303
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_login_form_that_is_not_utf8_is_400(tmp_path, keys):
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    async with running_app(people_tree(tmp_path, AUTH)) as (client, _):
        resp = await client.post("/dashboard/login", data=b"key=\xff\xfe\xe9", headers=form)
        assert_json_error(resp.status, await resp.json())
        bogus = {"Content-Type": "application/x-www-form-urlencoded; charset=x-bogus"}
        resp = await client.post("/dashboard/login", data=b"key=stats-key", headers=bogus)
        assert_json_error(resp.status, await resp.json())


BODIES = {
    "deep_json": ("[" * 10_000 + "]" * 10_000).encode(),
    "deep_object": ('{"query": ' + "[" * 10_000 + "]" * 10_000 + "}").encode(),
    "not_utf8": b'{"query": "caf\xe9"}',
}


@pytest.mark.parametrize("path", ["/v1/query", "/v1/test_routing"])
async def test_junk_bodies_are_400_and_not_logged_as_errors(tmp_path, keys, caplog, path):
    good = json.dumps({"query": "who works in Sales?", "adapter": "people"}).encode()
    cases = (
        [(body, JSON) for body in BODIES.values()]
        + [
            (good, {**JSON, "Content-Type": "application/json; charset=x-bogus"}),
            (good, {**JSON, "Content-Encoding": "gzip"}),  # claims gzip, is not
            (gzip.compress(good)[:-9] + b"garbage!!", {**JSON, "Content-Encoding": "gzip"}),  # broken gzip
            (b"\x00" * 64, {**JSON, "Content-Encoding": "deflate"}),
        ]
    )
    async with running_app(people_tree(tmp_path, AUTH)) as (client, _):
        with caplog.at_level(logging.ERROR):
            for body, headers in cases:
                resp = await client.post(path, data=body, headers=headers)
                assert_json_error(resp.status, await resp.json())
        ok = await client.post(path, data=gzip.compress(good), headers={**JSON, "Content-Encoding": "gzip"})
        assert ok.status == 200  # a real gzip body is fine
        assert await logged_errors(client) == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_admin_and_mcp_bodies_are_not_500(tmp_path, keys, caplog):
    admin = {"X-API-Key": "admin-key", "Content-Type": "application/json"}
    async with running_app(people_tree(tmp_path, AUTH)) as (client, _):
        with caplog.at_level(logging.ERROR):
            resp = await client.post("/admin/reload", data=b"junk", headers={**admin, "Content-Encoding": "gzip"})
            assert resp.status < 500
            resp = await client.post(
                "/mcp",
                data=b"not gzip",
                headers={**admin, "Content-Encoding": "gzip", "Accept": "application/json, text/event-stream"},
            )
            assert resp.status < 500
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
