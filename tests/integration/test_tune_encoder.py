"""`run.py tune-encoder` end to end: a tiny tune writes a folder that pulls a template's texts together,
the server runs it through `embedding.model_path` with the training runtime's vectors, the cache keeps
its vectors apart from the stock model's, and a manifest whose templates changed is reported as stale."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from server.cli.main import main
from server.embedding import EmbeddingSettings
from server.embedding.factory import build_embedder
from server.embedding.minilm import MODEL_ID, MiniLMEmbedder
from server.embedding.minilm_graph import BertShape
from server.embedding.model_folder import read_folder
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree
from server.tune.bert_jax import encode, trainable_params
from server.tune.train import Tokens

REPO = Path(__file__).resolve().parents[2]
TUNED_CONFIG = """
embedding:
  provider: minilm
  model_path: data/tuned-encoder
  cache: {enabled: true, path: data/embedding_cache.sqlite3}
store: {backend: memory}
"""
TEMPLATE_TEXTS = {
    "people_in_department": [
        "List the people who work in a department",
        "Who works in Engineering?",
        "Show me the people in Sales",
        "list staff of the HR department",
    ],
    "headcount_by_department": [
        "Count how many people work in each department",
        "How many people are in each department?",
        "headcount per department",
    ],
    "person_by_name": ["Look up one person by name", "Find the employee called Ada", "show me the record for Grace"],
}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The people config tuned for a few steps by the real command (the step count from the config's
    `tune:` block: no --steps given), written unmixed (`stock_share: 0`); (config dir, its last stdout line)."""
    config = people_tree(tmp_path_factory.mktemp("tune"), BASE_CONFIG + "tune: {steps: 8, stock_share: 0}\n")
    run = subprocess.run(
        [sys.executable, "run.py", "--config", str(config), "tune-encoder", "--validation", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "tune-encoder [" in run.stderr  # the progress bar
    return config, json.loads(run.stdout.strip().splitlines()[-1])


def separation(embedder: MiniLMEmbedder) -> float:
    """Mean cosine of same-template pairs minus the mean cosine of pairs from different templates."""
    vectors = {name: embedder.embed_sync(texts) for name, texts in TEMPLATE_TEXTS.items()}
    same = [float(a @ b) for v in vectors.values() for a, b in combinations(v, 2)]
    other = [float(a @ b) for x, y in combinations(vectors.values(), 2) for a in x for b in y]
    return float(np.mean(same) - np.mean(other))


def test_a_tiny_tune_pulls_templates_apart(tuned: tuple[Path, dict], minilm_embedder: MiniLMEmbedder) -> None:
    config, body = tuned
    folder = Path(body["model_path"])
    assert folder == config.parent / "data" / "tuned-encoder"
    manifest = json.loads((folder / "intent_router_tune.json").read_text())
    assert manifest["base_model"]["name"] == "all-MiniLM-L6-v2" and manifest["templates"] == 3
    assert manifest["settings"]["learning_rate"] == 3e-5 and manifest["steps"] == body["steps"] == 8
    model = build_embedder(EmbeddingSettings(model_path=str(folder), cache={"enabled": False}), config.parent)
    assert isinstance(model, MiniLMEmbedder)
    before, after = separation(minilm_embedder), separation(model)
    print(f"separation {before:.4f} -> {after:.4f}")
    assert after > before + 0.02, (before, after)


def test_the_served_vectors_equal_the_training_forward_pass(tuned: tuple[Path, dict]) -> None:
    folder = read_folder(Path(tuned[1]["model_path"]))
    texts = [t for texts in TEMPLATE_TEXTS.values() for t in texts]
    served = build_embedder(EmbeddingSettings(model_path=str(folder.root), cache={"enabled": False}), folder.root)
    from tokenizers import Tokenizer

    ids, mask = Tokens(Tokenizer.from_file(str(folder.tokenizer)), folder.max_tokens)(texts)
    params = trainable_params(load_file(str(folder.weights)))
    trained = np.asarray(encode(params, ids, mask, BertShape.from_config(folder.bert_config()), folder.pooling))
    np.testing.assert_allclose(served.embed_sync(texts), trained, atol=1e-4)


async def test_the_server_runs_the_tuned_folder_and_reports_it_stale(tuned: tuple[Path, dict]) -> None:
    config, _ = tuned
    (config / "config.yaml").write_text(TUNED_CONFIG)
    async with running_app(config) as (client, holder):
        [embedder] = holder.current.embedders.values()
        assert embedder.model_id.startswith("minilm:tuned-encoder@")
        resp = await client.post("/v1/test_routing", json={"query": "who works in Sales?", "adapter": "people"})
        assert resp.status == 200
        assert (await resp.json())["all_matches"][0]["template_id"] == "people_in_department"
        health = await (await client.get("/health")).json()
        assert health["status"] == "ok" and not health["config"]["last_load"]["warnings"]

        library = config.parent / "templates" / "people" / "people.yaml"
        original = library.read_text()
        library.write_text(original.replace("headcount per department", "staff numbers by department"))
        try:
            status = await holder.reload()
            assert status.ok
            health = await (await client.get("/health")).json()
            assert health["status"] == "ok"  # still served
            [warning] = health["config"]["last_load"]["warnings"]
            assert "tuned encoder" in warning and "is stale" in warning and "tune-encoder" in warning
            resp = await client.post("/v1/test_routing", json={"query": "who works in Sales?", "adapter": "people"})
            assert resp.status == 200
        finally:
            library.write_text(original)


def test_validate_reports_a_stale_tuned_encoder(tuned: tuple[Path, dict], capsys: pytest.CaptureFixture) -> None:
    config, _ = tuned
    (config / "config.yaml").write_text(TUNED_CONFIG)
    library = config.parent / "templates" / "people" / "people.yaml"
    original = library.read_text()
    assert main(["--config", str(config), "validate"]) == 0
    assert "stale" not in capsys.readouterr().err
    library.write_text(original.replace("Look up one person by name", "Look up a person by their name"))
    try:
        assert main(["--config", str(config), "validate"]) == 0  # a warning, not an error
        assert "is stale" in capsys.readouterr().err
    finally:
        library.write_text(original)


def test_the_embedding_cache_is_keyed_by_the_model_folder(tuned: tuple[Path, dict], tmp_path: Path) -> None:
    folder = tuned[1]["model_path"]
    cache = {"enabled": True, "path": str(tmp_path / "cache.sqlite3")}
    stock = build_embedder(EmbeddingSettings(cache=cache), tmp_path)
    mine = build_embedder(EmbeddingSettings(model_path=folder, cache=cache), tmp_path)
    assert stock.model_id == MODEL_ID and mine.model_id.startswith("minilm:tuned-encoder@")
    text = ["who works in Sales?"]
    a, b = stock.embed_sync(text), mine.embed_sync(text)
    assert not np.allclose(a, b, atol=1e-3)
    np.testing.assert_allclose(stock.embed_sync(text), a)  # each from its own rows
    np.testing.assert_allclose(mine.embed_sync(text), b)
    with sqlite3.connect(cache["path"]) as db:
        ids = {row[0] for row in db.execute("SELECT DISTINCT model_id FROM embeddings")}
    assert ids == {stock.model_id, mine.model_id}


def test_a_stock_share_writes_the_weights_between_the_stock_and_the_tuned_ones(
    tuned: tuple[Path, dict], tmp_path: Path
) -> None:
    """`tune.stock_share: 0.5`: the same tune (same seed and steps), every float weight halfway to the stock
    encoder's; the manifest names the share."""
    from server.embedding.model_folder import MANIFEST, bundled_folder

    config = people_tree(tmp_path, BASE_CONFIG + "tune: {steps: 8, stock_share: 0.5}\n")
    out = tmp_path / "mixed"
    run = subprocess.run(
        [sys.executable, "run.py", "--config", str(config), "tune-encoder", "--validation", "0", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    stock = load_file(str(bundled_folder().weights))
    full = load_file(str(Path(tuned[1]["model_path"]) / "model.safetensors"))
    mixed = load_file(str(out / "model.safetensors"))
    moved = 0
    for name, weight in mixed.items():
        if np.issubdtype(weight.dtype, np.floating):
            np.testing.assert_allclose(weight, 0.5 * stock[name] + 0.5 * full[name], atol=1e-6, err_msg=name)
            moved += not np.array_equal(full[name], stock[name])
    assert moved > 50  # the tune moved the weights: the check above is not stock == tuned == mixed
    assert json.loads((out / MANIFEST).read_text())["settings"]["stock_share"] == 0.5
