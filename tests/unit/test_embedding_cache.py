"""The persistent embedding cache: warm restarts re-embed nothing, keys include the model."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from server.embedding import CachedEmbedder, Embedder
from server.embedding.cache import text_key, vector_bytes
from server.embedding.minilm import MiniLMEmbedder

TEXTS = [
    "Who works in Engineering?",
    "Show me the sales team",
    "revenue last quarter",
    "Who works in Engineering?",
    "my card was declined",
]


class OtherModel(Embedder):
    """The same vectors under another model identity, counting what it is asked to embed."""

    model_id = "minilm:some-other-model"

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.asked: list[str] = []

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.extend(texts)
        return self.inner.embed_sync(texts)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.extend(texts)
        return await self.inner.embed(texts)


async def test_warm_restart_reembeds_nothing(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    path = tmp_path / "cache.sqlite3"
    first = CachedEmbedder(minilm_embedder, path)
    cold = await first.embed(TEXTS)
    assert (first.stats.hits, first.stats.misses, first.stats.computed) == (0, 5, 4)  # duplicate embedded once
    again = await first.embed(TEXTS[:2])
    assert first.stats.disk_hits == 2 and first.stats.computed == 4  # template texts: from the file
    np.testing.assert_array_equal(again, cold[:2])
    await first.close()

    second = CachedEmbedder(minilm_embedder, path)
    warm = await second.embed(TEXTS)
    assert (second.stats.hits, second.stats.misses, second.stats.computed) == (5, 0, 0)
    assert second.stats.disk_hits == 5
    np.testing.assert_array_equal(warm, cold)
    np.testing.assert_allclose(cold, minilm_embedder.embed_sync(TEXTS), atol=1e-6)
    await second.close()


async def test_only_misses_are_computed(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    counting = OtherModel(minilm_embedder)
    cache = CachedEmbedder(counting, tmp_path / "cache.sqlite3")
    await cache.embed(TEXTS[:2])
    counting.asked.clear()
    out = await cache.embed(["brand new question", *TEXTS[:2]])
    assert counting.asked == ["brand new question"]
    assert out.shape == (3, minilm_embedder.dim)
    await cache.close()


def test_cache_is_keyed_by_model(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    path = tmp_path / "cache.sqlite3"
    CachedEmbedder(minilm_embedder, path).embed_sync(TEXTS)
    other = OtherModel(minilm_embedder)
    cache = CachedEmbedder(other, path)
    cache.embed_sync(TEXTS)
    assert cache.stats.hits == 0 and cache.stats.computed == 4
    assert sorted(set(other.asked)) == sorted(set(TEXTS))
    with sqlite3.connect(path) as db:
        per_model = dict(db.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id").fetchall())
    assert per_model == {minilm_embedder.model_id: 4, other.model_id: 4}


async def test_sync_and_async_share_the_cache(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    cache = CachedEmbedder(minilm_embedder, tmp_path / "cache.sqlite3")
    synced = cache.embed_sync(TEXTS[:3])
    awaited = await cache.embed(TEXTS[:3])
    np.testing.assert_array_equal(synced, awaited)
    assert cache.stats.computed == 3 and cache.stats.hits == 3
    assert (await cache.embed([])).shape == (0, minilm_embedder.dim)
    await cache.close()


def test_memory_only_without_a_path(minilm_embedder: MiniLMEmbedder) -> None:
    two = 2 * vector_bytes(text_key(TEXTS[0]), np.zeros(minilm_embedder.dim, dtype=np.float32))
    cache = CachedEmbedder(minilm_embedder, None, memory_bytes=two)
    cache.embed_sync(TEXTS[:3])  # three distinct texts, room for two
    cache.embed_sync(TEXTS[2:3])
    cache.embed_sync(TEXTS[:1])
    assert not cache.persistent
    assert cache.stats.memory_hits == 1 and cache.stats.computed == 4  # the oldest was evicted


def test_unusable_cache_file_degrades_to_memory(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    cache = CachedEmbedder(minilm_embedder, blocker / "sub" / "cache.sqlite3")
    assert not cache.persistent
    assert cache.embed_sync(TEXTS[:2]).shape == (2, minilm_embedder.dim)


def test_disk_cache_is_bounded_and_keeps_recently_used(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    path = tmp_path / "cache.sqlite3"
    texts = [f"question {i}" for i in range(12)]
    writer = CachedEmbedder(minilm_embedder, path, memory_bytes=0, max_disk_entries=10)
    writer.embed_sync(texts[:6])
    with sqlite3.connect(path) as db:  # written two hours ago (use is recorded to the hour)
        db.execute("UPDATE embeddings SET used_at = used_at - 7200")
    writer.embed_sync(texts[:2])  # read back from disk: now the most recently used
    writer.embed_sync(texts[6:])
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM embeddings").fetchone()[0] <= 10
    reader = CachedEmbedder(minilm_embedder, path)
    reader.embed_sync(texts[:2])
    assert reader.stats.disk_hits == 2


def test_fresh_hits_do_not_rewrite_their_rows(tmp_path: Path, minilm_embedder: MiniLMEmbedder) -> None:
    """A warm start reads every template's vector: rows used within the hour are not written again."""
    path = tmp_path / "cache.sqlite3"
    CachedEmbedder(minilm_embedder, path, memory_bytes=0).embed_sync(TEXTS)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE embeddings SET used_at = 1000.0 WHERE rowid = 1")  # long ago
        db.execute("UPDATE embeddings SET used_at = used_at - 60 WHERE rowid <> 1")  # a minute ago
        before = dict(db.execute("SELECT rowid, used_at FROM embeddings"))
    reader = CachedEmbedder(minilm_embedder, path, memory_bytes=0)
    reader.embed_sync(TEXTS)
    assert reader.stats.disk_hits == len(TEXTS)
    with sqlite3.connect(path) as db:
        after = dict(db.execute("SELECT rowid, used_at FROM embeddings"))
    assert after[1] > before[1] + 3600  # the stale row is refreshed
    assert {k: v for k, v in after.items() if k != 1} == {k: v for k, v in before.items() if k != 1}


async def test_questions_stay_in_memory_and_never_reach_the_file(
    tmp_path: Path, minilm_embedder: MiniLMEmbedder
) -> None:
    path = tmp_path / "cache.sqlite3"
    first = CachedEmbedder(minilm_embedder, path)
    vector = await first.embed_query("how many people work in Finance?")
    assert np.allclose(vector, minilm_embedder.embed_sync(["how many people work in Finance?"])[0], atol=1e-6)
    again = await first.embed_query("how many people work in Finance?")
    assert (first.stats.computed, first.stats.hits) == (1, 1) and np.array_equal(vector, again)
    await first.close()

    second = CachedEmbedder(minilm_embedder, path)  # a restart: the question was not persisted
    await second.embed_query("how many people work in Finance?")
    assert second.stats.computed == 1
    await second.close()
    assert sqlite3.connect(path).execute("SELECT count(*) FROM embeddings").fetchone() == (0,)


def test_stale_rows_are_refreshed_in_one_transaction(tmp_path: Path) -> None:
    """A warm start an hour after the last one refreshes every row it reads: one commit for all of them (each
    row committed on its own cost a file sync apiece, minutes for a large library)."""
    from server.embedding.cache import _DiskCache

    path = tmp_path / "cache.sqlite3"
    disk = _DiskCache(path, max_entries=10_000)
    keys = [text_key(f"text {i}") for i in range(300)]
    disk.put("m", [(k, np.full(4, i, dtype=np.float32)) for i, k in enumerate(keys)])
    disk._db.execute("UPDATE embeddings SET used_at = used_at - 7200")  # two hours ago
    statements: list[str] = []
    disk._db.set_trace_callback(statements.append)
    found = disk.get("m", keys)
    disk._db.set_trace_callback(None)
    assert len(found) == 300 and float(found[keys[7]][0]) == 7.0
    updates = [s for s in statements if s.startswith("UPDATE")]
    assert len(updates) == 300 and statements.count("BEGIN") == 1 and statements.count("COMMIT") == 1
    assert statements.index("BEGIN") < statements.index(updates[0]) < statements.index("COMMIT")
    refreshed = disk._db.execute("SELECT min(used_at) FROM embeddings").fetchone()[0]
    disk.close()
    assert refreshed > time.time() - 60


async def test_template_vectors_stay_out_of_memory_when_the_file_keeps_them(
    tmp_path: Path, minilm_embedder: MiniLMEmbedder
) -> None:
    """The template stores hold the templates' vectors and the file persists them: the memory LRU holds
    questions only (a third copy of every example cost ~1.7 KB per example at 1,000 templates)."""
    path = tmp_path / "cache.sqlite3"
    cache = CachedEmbedder(minilm_embedder, path)
    computed = cache.embed_sync(TEXTS)  # embedded, written to the file
    reader = CachedEmbedder(minilm_embedder, path)
    np.testing.assert_array_equal(await reader.embed(TEXTS), computed)  # read back from the file
    assert reader.stats.disk_hits == len(TEXTS) and reader.memory_entries == 0
    await reader.close()
    assert cache.memory_entries == 0 and cache.memory_bytes == 0
    question = await cache.embed_query("how many people work in Finance?")
    assert cache.memory_entries == 1
    assert cache.memory_bytes == vector_bytes(text_key("how many people work in Finance?"), question)
    again = cache.embed_sync(TEXTS)
    assert cache.stats.disk_hits == len(TEXTS) and cache.stats.computed == 4 + 1  # the question's
    np.testing.assert_array_equal(again, computed)
    await cache.close()
