"""A reload that meets an alias bomb or a non-UTF-8 file is refused quickly with file:line, and the last
good config keeps answering."""

from __future__ import annotations

import time

from server.testing.app import running_app
from server.testing.configs import people_tree

QUESTION = {"query": "who works in the Engineering department?", "adapter": "people"}


def bomb(levels: int = 6) -> str:
    lines = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


async def test_alias_bomb_and_bad_bytes_in_a_library_are_refused_on_reload(tmp_path):
    library_dir = tmp_path / "templates" / "people"
    async with running_app(people_tree(tmp_path)) as (client, _):
        (library_dir / "bomb.yaml").write_text(bomb())  # ~600,000 values if expanded
        started = time.perf_counter()
        resp = await client.post("/admin/reload")
        elapsed = time.perf_counter() - started
        body = await resp.json()
        assert resp.status == 422
        assert [(e["file"], e["line"]) for e in body["errors"]] == [("templates/people/bomb.yaml", 5)]
        # refused before anything is expanded (expanding it would hold ~600,000 values); no tight bound:
        # tests/unit/test_yaml_bounds.py pins the memory, a loaded machine makes any wall-clock bound flaky
        assert elapsed < 10.0
        assert (await client.post("/v1/query", json=QUESTION)).status == 200  # the last good config
        (library_dir / "bomb.yaml").write_bytes(b"templates:\n  - id: caf\xe9\n")
        resp = await client.post("/admin/reload")
        body = await resp.json()
        health = await (await client.get("/health")).json()
    assert resp.status == 422
    [error] = body["errors"]
    assert (error["file"], error["line"]) == ("templates/people/bomb.yaml", 2)
    assert "UTF-8" in error["message"]
    assert health["config"]["last_load"]["errors"][0]["file"] == "templates/people/bomb.yaml"
