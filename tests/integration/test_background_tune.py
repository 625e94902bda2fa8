"""`tune.on_reload`: an edit that leaves the tuned encoder stale is tuned again in a child process
while the server answers with the old folder, and the server then reloads onto the new one; shutdown stops
the child; a failing tune is reported and not retried for the same templates."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from server.embedding.model_folder import bundled_folder
from server.embedding.tuned_manifest import read_manifest, templates_hash, write_manifest
from server.runtime.background_tune import TRIGGER, BackgroundTune
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_config
from server.testing.app import running_app
from server.testing.configs import people_tree
from server.web.encoder_tune import BACKGROUND_TUNE

FOLDER = "data/tuned-encoder"
ON_RELOAD = f"""
embedding:
  provider: minilm
  model_path: {FOLDER}
  cache: {{enabled: true, path: data/embedding_cache.sqlite3}}
store: {{backend: memory}}
tune: {{on_reload: true, steps: 3, max_seconds: 240, nice: 5}}
"""
TUNE_SECONDS = 300  # a tiny tune: JAX's import and compilation dominate; generous for a loaded machine


@pytest.fixture
def tuned(tmp_path: Path) -> Path:
    """The people config with a tuned folder for its templates (the stock weights and a manifest naming
    the templates' hash: what `tune-encoder` writes, without the minutes), background tune on."""
    config = people_tree(tmp_path / "tree", ON_RELOAD)
    stock, folder = bundled_folder().root, config.parent / FOLDER
    folder.mkdir(parents=True)
    for item in stock.iterdir():
        if item.name != "model.safetensors" and not item.name.startswith("."):
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, folder / item.name)
    (folder / "model.safetensors").symlink_to(stock / "model.safetensors")  # replaced, never written, by a tune
    digest = templates_hash(load_config(config).templates)  # up to date: an edit makes it stale
    write_manifest(folder, {"base_model": {"name": "all-MiniLM-L6-v2", "path": None}, "templates_hash": digest})
    return config


def edit(config: Path, old: str, new: str) -> None:
    library = config.parent / "templates" / "people" / "people.yaml"
    text = library.read_text()
    assert old in text
    library.write_text(text.replace(old, new))


async def until(check, seconds: float = TUNE_SECONDS, step: float = 0.2) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(step)


async def test_an_edit_is_tuned_in_the_background_and_served(tuned: Path) -> None:
    folder = tuned.parent / FOLDER
    async with running_app(tuned) as (client, holder):
        tune = client.app[BACKGROUND_TUNE]
        health = await (await client.get("/health")).json()
        assert health["encoder_tune"] == {"on_reload": True, "status": "idle", "runs": 0}
        [before] = holder.current.embedders.values()

        edit(tuned, "headcount per department", "staff numbers by department")
        status = await holder.reload()
        assert status.ok and "is stale" in status.warnings[0]
        await until(lambda: tune.state.status == "running")
        # meanwhile the old folder answers
        resp = await client.post("/v1/test_routing", json={"query": "who works in Sales?", "adapter": "people"})
        assert resp.status == 200
        assert (await resp.json())["all_matches"][0]["template_id"] == "people_in_department"

        await until(lambda: holder.last_load is not None and holder.last_load.trigger == TRIGGER)
        assert holder.last_load.ok and not holder.last_load.warnings  # no longer stale
        manifest = read_manifest(folder)
        assert manifest is not None and manifest["templates_hash"] == templates_hash(holder.current.config.templates)
        [after] = holder.current.embedders.values()
        assert after is not before  # the rewritten weights are a new embedder
        health = await (await client.get("/health")).json()
        assert health["encoder_tune"]["status"] == "done" and health["encoder_tune"]["runs"] == 1
        assert health["encoder_tune"]["steps"] == 3 and "pid" not in health["encoder_tune"]
        resp = await client.post("/v1/test_routing", json={"query": "staff numbers by department", "adapter": "people"})
        assert (await resp.json())["all_matches"][0]["template_id"] == "headcount_by_department"


@contextlib.asynccontextmanager
async def tuning(tuned: Path) -> AsyncIterator[tuple[TestClient, RuntimeHolder, BackgroundTune, int]]:
    """A running app whose edit started a background tune: (client, holder, tune, the child's pid)."""
    async with running_app(tuned) as (client, holder):
        tune = client.app[BACKGROUND_TUNE]
        await client.get("/health")
        edit(tuned, "headcount per department", "staff numbers by department")
        assert (await holder.reload()).ok
        await until(lambda: tune.state.pid is not None)
        assert tune.state.pid is not None
        yield client, holder, tune, tune.state.pid


async def test_shutdown_stops_a_running_tune(tuned: Path) -> None:
    async with tuning(tuned) as (_, _, tune, pid):
        await asyncio.sleep(1.0)  # the child is importing or training now
        stopping = time.monotonic()
    took = time.monotonic() - stopping
    assert took < 4.0, took  # SIGTERM, else SIGKILL after 2 s
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert tune.state.status == "idle" and tune.state.message == "stopped"


async def test_a_failing_tune_is_reported_once_per_templates(tuned: Path) -> None:
    folder = tuned.parent / FOLDER
    manifest = json.loads((folder / "intent_router_tune.json").read_text())
    manifest["base_model"]["path"] = str(tuned.parent / "no-such-model")  # re-tuning starts from its base
    (folder / "intent_router_tune.json").write_text(json.dumps(manifest))
    async with running_app(tuned) as (client, holder):
        tune = client.app[BACKGROUND_TUNE]
        await client.get("/health")
        edit(tuned, "headcount per department", "staff numbers by department")
        assert (await holder.reload()).ok
        await until(lambda: tune.state.status == "failed")
        admin = await (await client.get("/health")).json()
        assert "no-such-model" in admin["encoder_tune"]["message"] and admin["encoder_tune"]["runs"] == 1
        (tuned / "config.yaml").write_text(ON_RELOAD + "# touched\n")
        assert (await holder.reload()).ok  # same templates: not tried again
        await asyncio.sleep(0.5)
        assert tune.state.status == "failed" and tune.state.runs == 1
        edit(tuned, "Look up one person by name", "Look up a person by their name")
        assert (await holder.reload()).ok  # new templates: tried again
        await until(lambda: tune.state.runs == 2 and tune.state.status == "running")


async def test_turning_it_off_stops_the_running_tune(tuned: Path) -> None:
    async with tuning(tuned) as (_, holder, tune, pid):
        (tuned / "config.yaml").write_text(ON_RELOAD.replace("on_reload: true", "on_reload: false"))
        assert (await holder.reload()).ok
        await until(lambda: tune.state.status == "idle", seconds=5)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_a_folder_stale_at_start_is_tuned_once_the_server_has_answered(tuned: Path) -> None:
    edit(tuned, "headcount per department", "staff numbers by department")  # before the start
    async with running_app(tuned) as (client, holder):
        tune = client.app[BACKGROUND_TUNE]
        assert "is stale" in holder.last_load.warnings[0]
        await client.get("/health")  # the start gate opens: the tune starts once the server has answered
        await until(lambda: tune.state.pid is not None)
