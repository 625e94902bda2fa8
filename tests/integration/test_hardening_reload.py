"""Reload safety: a reload that would take away what clients use (every adapter, a client key's
adapters, the default adapter) or break the start's auth rules is refused like an invalid config —
the last good config keeps serving and /health shows the errors — unless the operator asks for the
removal explicitly. Every config.yaml setting either applies on reload or is reported as needing a
restart."""

from __future__ import annotations

import sqlite3

import pytest

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_people_db, make_tree
from server.web.routing_log import STATS_LOG

PEOPLE2_ADAPTER = PEOPLE_ADAPTER.replace("name: people", "name: people2")
QUESTION = {"query": "who works in the Engineering department?", "adapter": "people"}
ADMIN = {"X-API-Key": "admin-key"}
KEYS = """
auth:
  client_keys: [{name: chat, key_env: IR_HR_CHAT_KEY, adapters: [people2]}]
  admin_key_env: IR_HR_ADMIN_KEY
"""


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("IR_HR_CHAT_KEY", "chat-key")
    monkeypatch.setenv("IR_HR_ADMIN_KEY", "admin-key")
    monkeypatch.delenv("IR_HR_UNSET_KEY", raising=False)


def tree(root, config: str = BASE_CONFIG, two: bool = False):
    make_people_db(root / "templates" / "people.db")
    adapters = {"people.yaml": PEOPLE_ADAPTER, **({"people2.yaml": PEOPLE2_ADAPTER} if two else {})}
    return make_tree(root, config, adapters, {"people/people.yaml": PEOPLE_LIBRARY})


async def health(client, headers=None) -> dict:
    return await (await client.get("/health", headers=headers or {})).json()


async def test_a_reload_to_no_adapters_is_refused_unless_asked_for(tmp_path):
    config_dir = tree(tmp_path)
    async with running_app(config_dir) as (client, holder):
        (config_dir / "adapters" / "people.yaml").unlink()
        for _ in range(2):  # refused again the second time (not "unchanged")
            resp = await client.post("/admin/reload")
            body = await resp.json()
            assert resp.status == 422, body
            [error] = body["errors"]
            assert error["file"] == "config/adapters" and "no adapter" in error["message"]
            assert "allow_removal=true" in error["message"]
        status = await holder.reload(trigger="watch")  # the file watcher is refused the same way
        assert not status.ok
        assert (await client.post("/v1/query", json=QUESTION)).status == 200  # last good config
        state = await health(client)
        assert state["status"] == "degraded"
        assert "no adapter" in state["config"]["last_load"]["errors"][0]["message"]
        assert (await client.post("/admin/reload?allow_removal=maybe")).status == 400
        resp = await client.post("/admin/reload?allow_removal=true")
        assert resp.status == 200, await resp.json()
        assert (await client.post("/v1/query", json=QUESTION)).status == 404
        state = await health(client)
    assert state["adapters"] == {} and state["status"] != "ok"  # no adapter is not a healthy server


async def test_removing_a_client_keys_adapters_or_the_default_adapter_is_refused(tmp_path, keys):
    config = BASE_CONFIG + "server: {default_adapter: people}\n" + KEYS
    config_dir = tree(tmp_path, config, two=True)
    async with running_app(config_dir) as (client, _):
        (config_dir / "adapters" / "people2.yaml").unlink()  # the only adapter the chat key may query
        resp = await client.post("/admin/reload", headers=ADMIN)
        body = await resp.json()
        assert resp.status == 422
        [error] = body["errors"]
        assert error["key"] == "auth.client_keys[0].adapters" and "client key 'chat'" in error["message"]
        chat = {"X-API-Key": "chat-key"}
        assert (await client.post("/v1/query", json={**QUESTION, "adapter": "people2"}, headers=chat)).status == 200

        (config_dir / "adapters" / "people2.yaml").write_text(PEOPLE2_ADAPTER)
        (config_dir / "adapters" / "people.yaml").unlink()  # the default adapter
        resp = await client.post("/admin/reload", headers=ADMIN)
        body = await resp.json()
        assert resp.status == 422
        assert [e["key"] for e in body["errors"]] == ["server.default_adapter"]
        resp = await client.post("/v1/query", json={"query": QUESTION["query"]}, headers=ADMIN)
        assert resp.status == 200  # still answered by the default adapter of the last good config
        resp = await client.post("/admin/reload?allow_removal=true", headers=ADMIN)
        assert resp.status == 200, await resp.json()


async def test_removing_one_of_several_adapters_needs_no_confirmation(tmp_path, keys):
    config_dir = tree(tmp_path, BASE_CONFIG + KEYS, two=True)
    async with running_app(config_dir) as (client, _):
        (config_dir / "adapters" / "people.yaml").unlink()
        resp = await client.post("/admin/reload", headers=ADMIN)
        assert resp.status == 200, await resp.json()
        assert (await resp.json())["changes"]["adapters"]["removed"] == ["people"]


async def test_a_reload_must_keep_keys_on_a_non_loopback_server(tmp_path, keys):
    public = BASE_CONFIG + "server: {host: 0.0.0.0}\n"
    config_dir = tree(tmp_path, public + KEYS)
    async with running_app(config_dir) as (client, holder):
        (config_dir / "config.yaml").write_text(public)  # every key removed
        resp = await client.post("/admin/reload", headers=ADMIN)
        body = await resp.json()
        assert resp.status == 422
        assert body["errors"][0]["key"] == "auth" and "0.0.0.0" in body["errors"][0]["message"]
        assert (await client.post("/v1/query", json=QUESTION)).status == 401  # auth still on
        assert "0.0.0.0" in (await health(client, ADMIN))["config"]["last_load"]["errors"][0]["message"]
        holder.listen_host = "127.0.0.1"  # the address actually bound decides, as at start
        resp = await client.post("/admin/reload", headers=ADMIN)
        assert resp.status == 200, await resp.json()
        assert (await client.post("/v1/query", json=QUESTION)).status == 200  # loopback: no keys is allowed


async def test_a_reload_naming_an_unset_key_variable_is_refused(tmp_path, keys):
    config_dir = tree(tmp_path, BASE_CONFIG + KEYS, two=True)
    async with running_app(config_dir) as (client, _):
        (config_dir / "config.yaml").write_text(BASE_CONFIG + KEYS.replace("IR_HR_ADMIN_KEY", "IR_HR_UNSET_KEY"))
        resp = await client.post("/admin/reload", headers=ADMIN)
        body = await resp.json()
        assert resp.status == 422
        [error] = body["errors"]
        assert error["file"] == "config/config.yaml" and "IR_HR_UNSET_KEY" in error["message"]
        state = await health(client, ADMIN)  # the admin is not locked out
        assert "IR_HR_UNSET_KEY" in state["config"]["last_load"]["errors"][0]["message"]
        assert (await client.post("/admin/reload?allow_removal=true", headers=ADMIN)).status == 422  # no override


def stats_config(store_queries: bool, extra: str = "") -> str:
    flag = "true" if store_queries else "false"
    return BASE_CONFIG + f"stats: {{store_queries: {flag}, flush_interval: 30{extra}}}\n"


def logged_questions(root) -> list:
    con = sqlite3.connect(root / "data" / "routing_log.sqlite3")
    try:
        return [row[0] for row in con.execute("SELECT question FROM routing_log ORDER BY id")]
    finally:
        con.close()


async def test_turning_store_queries_off_by_reload_stops_question_text_at_once(tmp_path):
    config_dir = tree(tmp_path, stats_config(True))
    async with running_app(config_dir) as (client, _):
        rlog = client.app[STATS_LOG]
        await client.post("/v1/query", json={**QUESTION, "query": "who works in Sales?"})
        await rlog.flush()
        await client.post("/v1/query", json=QUESTION)  # queued (flush_interval 30 s), not yet written
        (config_dir / "config.yaml").write_text(stats_config(False, ", retention_days: 7"))
        resp = await client.post("/admin/reload")
        body = await resp.json()
        assert resp.status == 200 and body["restart_required"] == []
        await client.post("/v1/query", json={**QUESTION, "query": "list staff of the HR department"})
        await rlog.flush()
        stats = await (await client.get("/v1/routing/statistics?adapter=people")).json()
    assert logged_questions(tmp_path) == ["who works in Sales?", None, None]
    assert stats["routing_log"]["store_queries"] is False
    assert stats["config_status"]["stats_settings"]["store_queries"] is False
    assert stats["config_status"]["stats_settings"]["retention_days"] == 7


async def test_settings_that_need_a_restart_are_reported(tmp_path):
    config_dir = tree(tmp_path, stats_config(True))
    async with running_app(config_dir) as (client, _):
        changed = stats_config(False, ", table: other_log, queue_size: 5") + "server: {port: 9999}\n"
        (config_dir / "config.yaml").write_text(changed)
        resp = await client.post("/admin/reload")
        body = await resp.json()
        assert resp.status == 200, body
        assert body["restart_required"] == ["server.port", "stats.table", "stats.queue_size"]
        state = await health(client)
        assert state["config"]["restart_required"] == ["server.port", "stats.table", "stats.queue_size"]
        assert state["config"]["last_load"]["restart_required"] == ["server.port", "stats.table", "stats.queue_size"]
        stats = await (await client.get("/v1/routing/statistics?adapter=people")).json()
        in_effect = stats["config_status"]["stats_settings"]
        assert (in_effect["table"], in_effect["queue_size"]) == ("routing_log", 10000)  # as started
        assert in_effect["store_queries"] is False  # applied
        (config_dir / "config.yaml").write_text(stats_config(True))
        body = await (await client.post("/admin/reload")).json()
        assert body["ok"] and body["restart_required"] == []
        assert (await health(client))["config"]["restart_required"] == []
