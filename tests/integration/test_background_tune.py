"""`tune_encoder.on_reload`: an edit that leaves the tuned encoder stale is tuned again in a child process
while the server answers with the old folder, and the server then reloads onto the new one; shutdown stops
the child; a failing tune is reported and not retried for the same templates."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from server.embedding.tuned_manifest import read_manifest, templates_hash
from server.runtime.background_tune import TRIGGER
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree
from server.web.encoder_tune import BACKGROUND_TUNE

REPO = Path(__file__).resolve().parents[2]
FOLDER = "data/tuned-encoder"
ON_RELOAD = f"""
embedding:
  provider: minilm
  model_path: {FOLDER}
  cache: {{enabled: true, path: data/embedding_cache.sqlite3}}
store: {{backend: memory}}
tune_encoder: {{on_reload: true, steps: 3, max_seconds: 240, nice: 5}}
"""
TUNE_SECONDS = 300  # a tiny tune: JAX's import and compilation dominate; generous for a loaded machine


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The people config tuned for a few steps by the real command, its step count from the config's
    `tune_encoder` block (no --steps given); the config then turns the background tune on."""
    config = people_tree(tmp_path_factory.mktemp("tuned"), BASE_CONFIG + "tune_encoder: {steps: 2}\n")
    run = subprocess.run(
        [sys.executable, "run.py", "--config", str(config), "tune-encoder", "--validation", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TUNE_SECONDS,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["steps"] == 2
    (config / "config.yaml").write_text(ON_RELOAD)
    return config


@pytest.fixture
def tuned(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the tuned tree of its own (each test edits templates and the folder)."""
    root = tmp_path / "tree"
    shutil.copytree(pristine.parent, root)
    return root / pristine.name


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


async def test_shutdown_stops_a_running_tune(tuned: Path) -> None:
    async with running_app(tuned) as (client, holder):
        tune = client.app[BACKGROUND_TUNE]
        await client.get("/health")
        edit(tuned, "Look up one person by name", "Look up a person by their name")
        assert (await holder.reload()).ok
        await until(lambda: tune.state.pid is not None)
        pid = tune.state.pid
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
    async with running_app(tuned) as (client, holder):
        tune = client.app[BACKGROUND_TUNE]
        await client.get("/health")
        edit(tuned, "headcount per department", "staff numbers by department")
        assert (await holder.reload()).ok
        await until(lambda: tune.state.pid is not None)
        pid = tune.state.pid
        (tuned / "config.yaml").write_text(ON_RELOAD.replace("on_reload: true", "on_reload: false"))
        assert (await holder.reload()).ok
        await until(lambda: tune.state.status == "idle", seconds=5)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
