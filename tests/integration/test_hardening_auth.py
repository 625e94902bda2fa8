"""Auth details: dashboard sessions end with the key that opened them, login is rate-limited and
same-origin, scoped keys cannot probe adapter names, /health without a key says only its status,
statistics show no absolute paths, 401s name the Bearer scheme."""

from __future__ import annotations

import pytest

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree

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
