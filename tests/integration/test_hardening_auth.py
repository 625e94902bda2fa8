"""Auth details: dashboard sessions end with the key that opened them, login is rate-limited and
same-origin, scoped keys cannot probe adapter names, /health without a key says only its status,
statistics show no absolute paths, 401s name the Bearer scheme."""

from __future__ import annotations

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from server.errors import TooManyRequests
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_people_db, make_tree, people_tree
from server.web.dashboard_auth import COOKIE
from server.web.login_guard import LoginRateLimit

AUTH = """
auth:
  client_keys: [{name: chat, key_env: IR_HA_CHAT_KEY}]
  admin_key_env: {admin}
  stats_key_env: {stats}
"""


def auth_config(admin: str = "IR_HA_ADMIN_KEY", stats: str = "IR_HA_STATS_KEY") -> str:
    return BASE_CONFIG + AUTH.replace("{admin}", admin).replace("{stats}", stats)


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("IR_HA_CHAT_KEY", "chat-key")
    monkeypatch.setenv("IR_HA_ADMIN_KEY", "admin-key")
    monkeypatch.setenv("IR_HA_ADMIN_KEY_2", "admin-key-2")
    monkeypatch.setenv("IR_HA_STATS_KEY", "stats-key")
    monkeypatch.setenv("IR_HA_STATS_KEY_2", "stats-key-2")


async def login(client, key: str) -> None:
    resp = await client.post("/dashboard/login", data={"key": key}, allow_redirects=False)
    assert resp.status == 303, await resp.text()


async def test_a_session_ends_when_its_key_is_rotated_or_removed(tmp_path, keys):
    config_dir = people_tree(tmp_path, auth_config())
    async with running_app(config_dir) as (client, _):
        await login(client, "stats-key")
        assert (await client.get("/v1/routing/statistics")).status == 200
        # rotate the stats key: its variable changes by reload
        (config_dir / "config.yaml").write_text(auth_config(stats="IR_HA_STATS_KEY_2"))
        resp = await client.post("/admin/reload", headers={"X-API-Key": "admin-key"})
        assert resp.status == 200, await resp.text()
        assert (await client.get("/v1/routing/statistics")).status == 401
        await login(client, "stats-key-2")
        assert (await client.get("/v1/routing/statistics")).status == 200
        # an admin session survives a stats key change, ends when the admin key is rotated
        await login(client, "admin-key")
        assert (await client.get("/v1/routing/statistics")).status == 200
        (config_dir / "config.yaml").write_text(auth_config(admin="IR_HA_ADMIN_KEY_2", stats="IR_HA_STATS_KEY"))
        resp = await client.post("/admin/reload", headers={"X-API-Key": "admin-key"})
        assert resp.status == 200, await resp.text()
        assert (await client.get("/v1/routing/statistics")).status == 401


SCOPED = """
auth:
  client_keys: [{name: chat, key_env: IR_HA_CHAT_KEY, adapters: [people]}]
  admin_key_env: IR_HA_ADMIN_KEY
  stats_key_env: IR_HA_STATS_KEY
"""
PEOPLE2 = PEOPLE_ADAPTER.replace("name: people", "name: people2")


def scoped_tree(root):
    make_people_db(root / "templates" / "people.db")
    adapters = {"people.yaml": PEOPLE_ADAPTER, "people2.yaml": PEOPLE2}
    return make_tree(root, BASE_CONFIG + SCOPED, adapters, {"people/people.yaml": PEOPLE_LIBRARY})


async def answer(resp) -> tuple[int, str, str]:
    body = await resp.json()
    return (
        resp.status,
        body["error"]["code"],
        body["error"]["message"].replace("people2", "NAME").replace("nope", "NAME"),
    )


async def test_a_scoped_key_cannot_tell_unknown_from_forbidden_adapters(tmp_path, keys):
    chat = {"X-API-Key": "chat-key"}
    async with running_app(scoped_tree(tmp_path)) as (client, _):
        for path in ("/v1/query", "/v1/test_routing"):
            seen = set()
            for name in ("people2", "nope"):
                resp = await client.post(
                    path, json={"query": "headcount per department", "adapter": name}, headers=chat
                )
                seen.add(await answer(resp))
            assert seen == {(403, "forbidden", "this key may not query adapter 'NAME'")}, path
        seen = set()
        for name in ("people2", "nope"):
            seen.add(await answer(await client.get(f"/v1/templates?adapter={name}", headers=chat)))
        assert seen == {(403, "forbidden", "this key may not query adapter 'NAME'")}
        # a key that may query every adapter still learns that a name does not exist
        admin = {"X-API-Key": "admin-key"}
        assert (await client.get("/v1/templates?adapter=nope", headers=admin)).status == 404
        resp = await client.post("/v1/query", json={"query": "headcount", "adapter": "nope"}, headers=admin)
        assert resp.status == 404

        url = str(client.make_url("/mcp"))
        http = create_mcp_http_client(headers=chat)
        async with streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            results = []
            for tool, args in (("ask", {"question": "headcount"}), ("list_templates", {})):
                for name in ("people2", "nope"):
                    result = await mcp.call_tool(tool, {**args, "adapter": name})
                    assert result.is_error
                    text = " ".join(getattr(c, "text", "") for c in result.content)
                    results.append((tool, text.replace("people2", "NAME").replace("nope", "NAME")))
            assert results[0] == results[1] and results[2] == results[3]


async def test_health_without_a_key_says_only_its_status(tmp_path, keys):
    async with running_app(scoped_tree(tmp_path)) as (client, _):
        resp = await client.get("/health")
        assert resp.status == 200 and await resp.json() == {"status": "ok"}
        for key, seen in (
            ("chat-key", {"people"}),
            ("stats-key", {"people", "people2"}),
            ("admin-key", {"people", "people2"}),
        ):
            body = await (await client.get("/health", headers={"X-API-Key": key})).json()
            assert body["status"] == "ok" and set(body["adapters"]) == seen and "config" in body  # chat: its scope
        resp = await client.get("/health", headers={"X-API-Key": "wrong"})
        assert resp.status == 401


async def test_401_answers_name_the_bearer_scheme(tmp_path, keys):
    async with running_app(scoped_tree(tmp_path)) as (client, _):
        answers = [
            await client.post("/v1/query", json={"query": "x"}),
            await client.post("/v1/query", json={"query": "x"}, headers={"Authorization": "Bearer wrong"}),
            await client.get("/v1/templates"),
            await client.get("/v1/routing/statistics"),
            await client.post("/admin/reload"),
            await client.get("/metrics"),
            await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            await client.post("/dashboard/login", data={"key": "wrong"}, allow_redirects=False),
        ]
        for resp in answers:
            assert resp.status == 401, resp.url
            assert resp.headers.get("WWW-Authenticate", "").startswith("Bearer"), resp.url


def strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value


async def test_statistics_show_no_absolute_paths(tmp_path, keys):
    async with running_app(scoped_tree(tmp_path)) as (client, _):
        await client.post("/v1/query", json={"query": "headcount per department"}, headers={"X-API-Key": "chat-key"})
        resp = await client.get("/v1/routing/statistics?adapter=people", headers={"X-API-Key": "stats-key"})
        body = await resp.json()
    assert resp.status == 200
    root = str(tmp_path)
    leaks = [s for s in strings(body) if root in s or s.startswith("/")]
    assert leaks == []
    assert body["config_status"]["config_file"] == "config/config.yaml"
    assert body["routing_log"]["log"]["url"] == "sqlite:///data/routing_log.sqlite3"


async def test_login_is_rate_limited_per_client(tmp_path, keys):
    async with running_app(people_tree(tmp_path, auth_config())) as (client, _):
        for _ in range(10):
            resp = await client.post("/dashboard/login", data={"key": "guess"}, allow_redirects=False)
            assert resp.status == 401
        resp = await client.post("/dashboard/login", data={"key": "stats-key"}, allow_redirects=False)
        body = await resp.json()
        assert resp.status == 429 and body["error"]["code"] == "too_many_requests"
        assert 1 <= int(resp.headers["Retry-After"]) <= 60
        assert (await client.get("/v1/routing/statistics", headers={"X-API-Key": "stats-key"})).status == 200


def test_the_login_limit_window_slides_and_memory_is_bounded():
    limit = LoginRateLimit(attempts=2, window=60, clients=3)
    limit.check("a", now=0)
    limit.check("a", now=10)
    with pytest.raises(TooManyRequests) as refused:
        limit.check("a", now=30)
    assert refused.value.retry_after == 30  # the first attempt leaves the window at t=60
    limit.check("a", now=61)
    for client in ("b", "c", "d", "e"):
        limit.check(client, now=62)
    assert len(limit._seen) == 3


async def test_login_and_logout_must_come_from_the_same_origin(tmp_path, keys):
    async with running_app(people_tree(tmp_path, auth_config())) as (client, _):
        own = str(client.make_url("/")).rstrip("/")
        cross = [
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
            {"Referer": "http://evil.example/x"},
            {"Sec-Fetch-Site": "cross-site", "Origin": own},
            {"Sec-Fetch-Site": "same-site"},
        ]
        for headers in cross:
            form = {"key": "stats-key"}
            resp = await client.post("/dashboard/login", data=form, headers=headers, allow_redirects=False)
            assert resp.status == 403 and (await resp.json())["error"]["code"] == "forbidden"
            resp = await client.post("/dashboard/logout", headers=headers, allow_redirects=False)
            assert resp.status == 403
        assert COOKIE not in client.session.cookie_jar.filter_cookies(client.make_url("/"))
        resp = await client.post(
            "/dashboard/login", data={"key": "stats-key"}, headers={"Origin": own}, allow_redirects=False
        )
        assert resp.status == 303
        resp = await client.post("/dashboard/logout", headers={"Origin": own}, allow_redirects=False)
        assert resp.status == 303
        resp = await client.post(  # what Chromium sends for the login page's own form
            "/dashboard/login",
            data={"key": "stats-key"},
            headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
            allow_redirects=False,
        )
        assert resp.status == 303
