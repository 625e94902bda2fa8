"""Fitted intent models (and acceptance tests) survive a restart on disk, keyed by what they were fitted on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from server.intent.fitted_models import FittedModels
from server.routing.stages.intent_model import IntentModelStage
from server.runtime.build import Runtime, build_runtime
from server.runtime.loader import load_config
from server.service import answer as answering
from server.testing.composite_tree import build_tree, make_composite, probe_registry, probe_source

pytestmark = pytest.mark.asyncio

CHILDREN = ["hr", "sales"]
ON = {"intent_model": {"enabled": True}, "acceptance": {"enabled": True}}
QUESTIONS = ["which customers are in the West region?", "quarterly revenue please", "who works in sales?"]


async def start(root: Path, **keys) -> tuple[Runtime, IntentModelStage, dict]:
    """A new runtime with an empty in-memory cache, as a restarted process has."""
    registry = probe_registry()
    rt = await build_runtime(
        load_config(root / "config", registry=registry), registry=registry, make_source=probe_source
    )
    assert isinstance(rt.fitted_models, FittedModels) and rt.fitted_models.stats.memory_hits == 0
    c = make_composite(rt, CHILDREN, confidence_threshold=0.0, **(keys or ON))
    await c.start()
    [stage] = [s for s in c.routing_stages() if isinstance(s, IntentModelStage)]
    scores = {}
    for q in QUESTIONS:
        body = (await answering.explain_routing(c, q)).body
        scores[q] = [(m["template_id"], m["intent_model_score"], m.get("acceptance")) for m in body["all_matches"]]
    stage.describe_block = c.describe()["multistage_selection"]  # type: ignore[attr-defined]
    return rt, stage, scores


def files(root: Path) -> list[Path]:
    found = sorted(root.rglob("fitted_models/*.npz"))
    assert all(p.parent == found[0].parent for p in found)
    return found


async def test_a_second_start_loads_the_fit_and_a_changed_template_refits(tmp_path):
    build_tree(tmp_path)
    rt, stage, first = await start(tmp_path)
    await rt.close()
    assert stage.source == "fitted" and stage.acceptance_source == "fitted"
    assert rt.fitted_models.stats.disk_writes == 2 and len(files(tmp_path)) == 2
    assert stage.model is not None and stage.model.views is not None and stage.model.lexical is not None

    rt, stage, second = await start(tmp_path)
    await rt.close()
    stats = rt.fitted_models.stats
    assert stage.source == "disk" and stage.acceptance_source == "disk"
    assert stats.disk_loads == 2 and stats.disk_writes == 0 and stats.disk_misses == 0
    described = stage.describe_block  # type: ignore[attr-defined]
    assert described["intent_model"]["source"] == "disk" and described["acceptance"]["source"] == "disk"
    for q in QUESTIONS:  # the loaded model scores exactly as the fitted one did
        assert [m[0] for m in second[q]] == [m[0] for m in first[q]]
        assert np.allclose([m[1] for m in second[q]], [m[1] for m in first[q]], atol=1e-6)
        assert [m[2]["probability"] for m in second[q]] == pytest.approx([m[2]["probability"] for m in first[q]])

    library = tmp_path / "templates" / "sales" / "sales.yaml"
    library.write_text(library.read_text().replace("quarterly revenue", "revenue for each quarter"))
    rt, stage, _ = await start(tmp_path)
    await rt.close()
    assert stage.source == "fitted" and rt.fitted_models.stats.disk_misses >= 1
    assert len(files(tmp_path)) == 4  # the old fit stays (a rollback of the change loads it again)


async def test_a_corrupt_or_foreign_file_is_ignored_and_refitted(tmp_path):
    build_tree(tmp_path)
    rt, _, _ = await start(tmp_path, intent_model={"enabled": True})
    await rt.close()
    [model_file] = files(tmp_path)
    model_file.write_bytes(model_file.read_bytes()[:1000])  # truncated
    rt, stage, _ = await start(tmp_path, intent_model={"enabled": True})
    await rt.close()
    assert stage.source == "fitted" and rt.fitted_models.stats.disk_writes == 1

    # a valid file under this fingerprint's name but written for another one is not used either
    other = tmp_path / "other"
    build_tree(other)
    library = other / "templates" / "sales" / "sales.yaml"
    library.write_text(library.read_text().replace("total number of orders", "number of orders in total"))
    rt, _, _ = await start(other, intent_model={"enabled": True})
    await rt.close()
    [foreign] = files(other)
    foreign.replace(model_file)
    rt, stage, _ = await start(tmp_path, intent_model={"enabled": True})
    await rt.close()
    assert stage.source == "fitted"
    rt, stage, _ = await start(tmp_path, intent_model={"enabled": True})  # rewritten: loads now
    await rt.close()
    assert stage.source == "disk"


async def test_cache_dir_null_keeps_nothing_on_disk(tmp_path):
    build_tree(tmp_path)
    off = {"intent_model": {"enabled": True}}
    config = tmp_path / "config" / "config.yaml"
    config.write_text(config.read_text() + "\ncomposite_retrieval:\n  intent_model:\n    cache_dir: null\n")
    rt, stage, _ = await start(tmp_path, **off)
    await rt.close()
    assert stage.source == "fitted" and files(tmp_path) == [] and stage.cache_dir is None


async def test_a_file_of_the_previous_format_is_refitted_not_used(tmp_path):
    """Files of earlier formats are ignored and rewritten in the current one: format 1 (no description rows,
    so no updates on edit) and format 2 (centred example rows, where format 3 keeps the raw ones), and so is
    the current header over either's arrays."""
    build_tree(tmp_path)
    rt, _, _ = await start(tmp_path, intent_model={"enabled": True})
    await rt.close()
    [model_file] = files(tmp_path)
    with np.load(model_file, allow_pickle=False) as data:
        full = {name: data[name] for name in data.files if name != "meta"}
        meta = json.loads(data["meta"].tobytes().decode())
    first = {name: a for name, a in full.items() if name != "desc"}
    second = {("centred" if name == "examples" else name): a for name, a in full.items()}
    cases = [("intent-router-fitted/1", first), (meta["format"], first)]
    cases += [("intent-router-fitted/2", second), (meta["format"], second)]
    for header, kept in cases:
        with model_file.open("wb") as f:
            np.savez(f, meta=np.frombuffer(json.dumps({**meta, "format": header}).encode(), np.uint8), **kept)
        rt, stage, _ = await start(tmp_path, intent_model={"enabled": True})
        await rt.close()
        assert stage.source == "fitted" and stage.model is not None and stage.model.desc is not None
        assert rt.fitted_models.stats.disk_writes == 1
    rt, stage, _ = await start(tmp_path, intent_model={"enabled": True})  # rewritten: loads now
    await rt.close()
    assert stage.source == "disk" and stage.model is not None and stage.model.desc is not None
