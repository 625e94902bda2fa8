"""/health by key (issue 31): a client key limited to some adapters sees only those, a composite's children
only inside a composite of its own, and nothing that tells an adapter outside its scope from one that does
not exist; config-load errors (file, line, key) only with the admin key."""

from __future__ import annotations

import json

import pytest

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_people_db, make_tree

AUTH = """
auth:
  client_keys:
    - {name: chat, key_env: IR_HS_CHAT_KEY, adapters: [people]}
    - {name: team, key_env: IR_HS_TEAM_KEY, adapters: [both]}
    - {name: all, key_env: IR_HS_ALL_KEY}
  admin_key_env: IR_HS_ADMIN_KEY
  stats_key_env: IR_HS_STATS_KEY
"""
HIDDEN = "secretive_payroll"  # an adapter outside the limited keys' scope
BOTH = f"adapters:\n  - name: both\n    type: composite\n    child_adapters: [people, {HIDDEN}]\n"
KEYS = {"chat": "chat-key", "team": "team-key", "all": "all-key", "admin": "admin-key", "stats": "stats-key"}


@pytest.fixture
def keys(monkeypatch):
    for name, key in KEYS.items():
        monkeypatch.setenv(f"IR_HS_{name.upper()}_KEY", key)


def tree(root):
    make_people_db(root / "templates" / "people.db")
    adapters = {
        "people.yaml": PEOPLE_ADAPTER,
        "hidden.yaml": PEOPLE_ADAPTER.replace("name: people", f"name: {HIDDEN}"),
        "both.yaml": BOTH,
    }
    return make_tree(root, BASE_CONFIG + AUTH, adapters, {"people/people.yaml": PEOPLE_LIBRARY})


async def health(client, who: str) -> dict:
    resp = await client.get("/health", headers={"X-API-Key": KEYS[who]})
    assert resp.status == 200
    return await resp.json()


async def test_a_limited_key_sees_only_its_adapters(tmp_path, keys):
    async with running_app(tree(tmp_path)) as (client, _):
        seen = {who: await health(client, who) for who in KEYS}
    assert set(seen["chat"]["adapters"]) == {"people"}
    assert set(seen["team"]["adapters"]) == {"both"}  # its composite, with the children it routes to
    assert seen["team"]["adapters"]["both"]["children"] == ["people", HIDDEN]
    for who in ("all", "admin", "stats"):
        assert set(seen[who]["adapters"]) == {"people", HIDDEN, "both"}, who
    assert HIDDEN not in json.dumps(seen["chat"])  # nowhere, not in the config load's changes either
    assert seen["chat"]["status"] == "ok" and seen["chat"]["routing_log"]["status"] in ("ok", "starting")


async def test_config_load_errors_only_with_the_admin_key(tmp_path, keys):
    config = tree(tmp_path)
    async with running_app(config) as (client, _):
        (config / "adapters" / "broken.yaml").write_text("adapters:\n  - name: broken\n    type: sql\n    nope: 1\n")
        resp = await client.post("/admin/reload", headers={"X-API-Key": KEYS["admin"]})
        assert resp.status == 422
        seen = {who: await health(client, who) for who in KEYS}
    errors = seen["admin"]["config"]["last_load"]["errors"]
    assert errors and errors[0]["file"] == "config/adapters/broken.yaml" and errors[0]["line"]
    for who in ("chat", "team", "all", "stats"):
        last = seen[who]["config"]["last_load"]
        assert last["ok"] is False and last["error_count"] == len(errors), who
        assert not {"errors", "changes", "warnings"} & set(last), who
        assert "broken.yaml" not in json.dumps(seen[who]), who
