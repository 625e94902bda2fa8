"""The local MiniLM embedder agrees with sentence-transformers and behaves like an Embedder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from server.embedding import EmbeddingError, EmbeddingSettings
from server.embedding.factory import build_embedder, build_provider
from server.embedding.minilm import DIM, MAX_TOKENS, MODEL_ID, MiniLMEmbedder, MiniLMModel

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "embedding_reference.json"


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text())
    texts = [item["text"] for item in data["items"]]
    return texts, np.array([item["embedding"] for item in data["items"]], dtype=np.float64)


def test_agrees_with_sentence_transformers(
    minilm_embedder: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    texts, expected = reference
    got = minilm_embedder.embed_sync(texts)
    cosine = (got * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    worst = int(np.argmin(cosine))
    assert cosine[worst] > 0.9999, f"{texts[worst]!r}: cosine {cosine[worst]}"


def test_reference_covers_truncation_and_edge_cases(
    minilm_embedder: MiniLMEmbedder, reference: tuple[list[str], np.ndarray]
) -> None:
    texts, _ = reference
    token_counts = [len(e.ids) for e in minilm_embedder.model._tokenizer.encode_batch(texts)]
    assert max(token_counts) == MAX_TOKENS  # the long text was cut exactly where sentence-transformers cuts
    assert "" in texts


def test_rows_are_unit_float32_in_input_order(minilm_embedder: MiniLMEmbedder) -> None:
    texts = ["a much longer sentence about quarterly revenue by region and product line", "hi", "list employees", "hi"]
    batch = minilm_embedder.embed_sync(texts)
    assert batch.dtype == np.float32 and batch.shape == (4, DIM)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    one_by_one = np.stack([minilm_embedder.embed_sync([t])[0] for t in texts])
    np.testing.assert_allclose(batch, one_by_one, atol=1e-5)  # padding and sorting change nothing
    assert np.array_equal(batch[1], batch[3])


def test_small_batches_give_the_same_vectors(minilm_embedder: MiniLMEmbedder) -> None:
    texts = [f"question number {i} about {'orders ' * (i % 5)}" for i in range(10)]
    small = MiniLMEmbedder(minilm_embedder.model, batch_size=3)
    np.testing.assert_allclose(small.embed_sync(texts), minilm_embedder.embed_sync(texts), atol=1e-5)


async def test_async_matches_sync(minilm_embedder: MiniLMEmbedder) -> None:
    texts = ["Who works in Engineering?", "top customers"]
    np.testing.assert_array_equal(await minilm_embedder.embed(texts), minilm_embedder.embed_sync(texts))


async def test_empty_input(minilm_embedder: MiniLMEmbedder) -> None:
    assert minilm_embedder.embed_sync([]).shape == (0, DIM)
    assert (await minilm_embedder.embed([])).shape == (0, DIM)


def test_rejects_non_strings(minilm_embedder: MiniLMEmbedder) -> None:
    with pytest.raises(EmbeddingError, match="#1"):
        minilm_embedder.embed_sync(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(EmbeddingError, match="single string"):
        minilm_embedder.embed_sync("not a list")


def test_factory_holds_one_model_per_process(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    first = build_provider(EmbeddingSettings(), tmp_path)
    second = build_provider(EmbeddingSettings(batch_size=8), tmp_path / "elsewhere")
    assert isinstance(first, MiniLMEmbedder) and isinstance(second, MiniLMEmbedder)
    assert first.model is second.model is minilm_embedder.model
    assert first.model_id == MODEL_ID and second.batch_size == 8


def test_factory_wraps_in_cache_only_when_enabled(tmp_path: Path) -> None:
    cached = build_embedder(EmbeddingSettings(cache={"path": "c/emb.sqlite3"}), tmp_path)
    plain = build_embedder(EmbeddingSettings(cache={"enabled": False}), tmp_path)
    assert type(cached).__name__ == "CachedEmbedder" and cached.model_id == MODEL_ID
    assert (tmp_path / "c" / "emb.sqlite3").is_file()
    assert isinstance(plain, MiniLMEmbedder)


def test_graph_is_cached_on_disk_and_rebuilt_when_damaged(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    graph_dir = minilm_embedder.model.load_info.graph_path.parent
    reused = MiniLMModel(graph_dir)
    assert reused.load_info.graph_built is False
    assert reused.load_info.graph_path == minilm_embedder.model.load_info.graph_path

    damaged_dir = tmp_path / "models"
    damaged_dir.mkdir()
    target = damaged_dir / reused.load_info.graph_path.name
    stamp = graph_dir / "all-MiniLM-L6-v2.weights.json"
    (damaged_dir / stamp.name).write_bytes(stamp.read_bytes())
    target.write_bytes(b"not an onnx file")
    repaired = MiniLMModel(damaged_dir)
    assert repaired.load_info.graph_built is True
    assert target.stat().st_size > 80_000_000
    text = ["does the rebuilt graph agree?"]
    np.testing.assert_allclose(repaired.encode(text, 64), minilm_embedder.embed_sync(text), atol=1e-6)
