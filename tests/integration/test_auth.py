"""API keys: client keys limited to adapters, admin key for admin endpoints, loopback-only without keys."""

from __future__ import annotations

import asyncio

from server.cli.serve import serve
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, make_people_db, make_tree

TWO_ADAPTERS = """
adapters:
  - name: people
    type: sql
    connection: {url: "sqlite:///templates/people.db"}
    templates: ["templates/people/*.yaml"]
    confidence_threshold: 0.3
  - name: people2
    type: sql
    connection: {url: "sqlite:///templates/people.db"}
    templates: ["templates/people/*.yaml"]
    confidence_threshold: 0.3
"""

AUTH = (
    BASE_CONFIG
    + """
auth:
  client_keys:
    - {name: chat, key_env: IR_TEST_CHAT_KEY, adapters: [people]}
  admin_key_env: IR_TEST_ADMIN_KEY
  stats_key_env: IR_TEST_STATS_KEY
"""
)


def tree(tmp_path):
    make_people_db(tmp_path / "templates" / "people.db")
    return make_tree(tmp_path, AUTH, {"a.yaml": TWO_ADAPTERS}, {"people/p.yaml": PEOPLE_LIBRARY})


async def test_keys_and_roles(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_TEST_CHAT_KEY", "chat-secret")
    monkeypatch.setenv("IR_TEST_ADMIN_KEY", "admin-secret")
    monkeypatch.setenv("IR_TEST_STATS_KEY", "stats-secret")
    q = {"query": "headcount per department", "adapter": "people"}
    async with running_app(tree(tmp_path)) as (client, _):
        resp = await client.post("/v1/query", json=q)
        assert resp.status == 401
        assert (await resp.json())["error"]["code"] == "unauthorized"
        resp = await client.post("/v1/query", json=q, headers={"Authorization": "Bearer wrong"})
        assert resp.status == 401
        resp = await client.post("/v1/query", json=q, headers={"Authorization": "Bearer chat-secret"})
        assert resp.status == 200
        resp = await client.post("/v1/query", json=q, headers={"X-API-Key": "chat-secret"})
        assert resp.status == 200
        resp = await client.post("/v1/query", json={**q, "adapter": "people2"}, headers={"X-API-Key": "chat-secret"})
        assert resp.status == 403
        assert "people2" in (await resp.json())["error"]["message"]
        resp = await client.post("/admin/reload", headers={"X-API-Key": "chat-secret"})
        assert resp.status == 403
        resp = await client.post("/admin/reload", headers={"X-API-Key": "admin-secret"})
        assert resp.status == 200
        resp = await client.post("/v1/query", json=q, headers={"X-API-Key": "stats-secret"})
        assert resp.status == 403
        resp = await client.get("/v1/routing/statistics?adapter=people", headers={"X-API-Key": "stats-secret"})
        assert resp.status == 200
        resp = await client.get("/v1/routing/statistics?adapter=people", headers={"X-API-Key": "chat-secret"})
        assert resp.status == 403


def test_no_keys_refuses_non_loopback_bind(tmp_path, capsys):
    make_people_db(tmp_path / "templates" / "people.db")
    config = make_tree(tmp_path, BASE_CONFIG, {"a.yaml": TWO_ADAPTERS}, {"people/p.yaml": PEOPLE_LIBRARY})
    assert serve(config, "0.0.0.0", 0) == 2
    assert "refusing to listen on 0.0.0.0" in capsys.readouterr().err


def test_configured_key_variable_missing_refuses_start(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("IR_TEST_ADMIN_KEY", raising=False)
    monkeypatch.setenv("IR_TEST_CHAT_KEY", "x")
    monkeypatch.setenv("IR_TEST_STATS_KEY", "y")
    assert serve(tree(tmp_path), "127.0.0.1", 0) == 2
    assert "IR_TEST_ADMIN_KEY" in capsys.readouterr().err


async def _raw_status(host: str, port: int, header: bytes) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(
        b"GET /v1/templates HTTP/1.1\r\nHost: " + host.encode() + b"\r\n" + header + b"\r\nConnection: close\r\n\r\n"
    )
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    writer.close()
    return status


async def test_every_presented_credential_counts(tmp_path, monkeypatch):
    """A request is judged by every key it carries: an Authorization header that is not Bearer, or a Bearer
    key and an X-API-Key that differ, is a 401 even when one of them is valid (schemathesis' ignored_auth
    found the valid X-API-Key let through beside a broken Authorization); a key that is not UTF-8 is a 401,
    not a 500."""
    monkeypatch.setenv("IR_TEST_CHAT_KEY", "chat-secret")
    monkeypatch.setenv("IR_TEST_ADMIN_KEY", "admin-secret")
    async with running_app(tree(tmp_path)) as (client, _):
        for headers in (
            {"Authorization": "Basic Y2hhdDpzZWNyZXQ=", "X-API-Key": "chat-secret"},
            {"Authorization": "chat-secret", "X-API-Key": "chat-secret"},
            {"Authorization": "Bearer ", "X-API-Key": "chat-secret"},
            {"Authorization": "Bearer admin-secret", "X-API-Key": "chat-secret"},
        ):
            resp = await client.get("/v1/templates", headers=headers)
            assert resp.status == 401 and (await resp.json())["error"]["code"] == "unauthorized", headers
        same = {"Authorization": "Bearer chat-secret", "X-API-Key": "chat-secret"}
        assert (await client.get("/v1/templates", headers=same)).status == 200
        assert (await client.get("/health", headers={"Authorization": "Basic x"})).status == 401
        host, port = client.server.host, client.server.port
        assert await _raw_status(host, port, b"X-API-Key: \xff\xfe-key") == 401
        assert await _raw_status(host, port, b"Authorization: Bearer \xed\xa0\x80") == 401
