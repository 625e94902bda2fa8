"""The embedding cache's memory LRU is bounded in bytes (issue 31): unique questions past the bound keep
its accounted bytes under `memory_max_bytes`, and the accounting is what tracemalloc sees it hold."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from server.embedding import CachedEmbedder
from server.embedding.minilm import RECENT_VIEWS_BYTES, MiniLMEmbedder
from server.embedding.settings import EmbeddingSettings

HERE = {str(Path(__file__).resolve().parents[2] / "server" / name) for name in ("recent.py", "embedding/cache.py")}


def held_by_the_cache(snapshot: tracemalloc.Snapshot) -> int:
    """Live bytes allocated in the cache's own code (the vectors it copied, its keys and its map's slots)."""
    return sum(s.size for s in snapshot.statistics("filename") if s.traceback[0].filename in HERE)


async def test_unique_questions_level_off_at_the_byte_bound(minilm_embedder: MiniLMEmbedder) -> None:
    bound = 256 * 2**10  # about 140 MiniLM vectors
    cache = CachedEmbedder(minilm_embedder, None, memory_bytes=bound)
    tracemalloc.start()
    try:
        for start in range(0, 800, 50):
            await cache.embed_questions(
                [f"how many orders did customer {i} place in march" for i in range(start, start + 50)]
            )
            assert cache.memory_bytes <= bound
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = held_by_the_cache(snapshot)
    assert 0.85 * held <= cache.memory_bytes <= 1.15 * held
    assert held <= 1.15 * bound
    assert cache.memory_bytes > 0.9 * bound  # full, not emptied
    again = await cache.embed_questions(["how many orders did customer 799 place in march"])
    assert cache.stats.memory_hits >= 1 and again.shape == (1, minilm_embedder.dim)
    await cache.close()


def test_the_bound_is_a_setting() -> None:
    assert EmbeddingSettings.model_validate({"cache": {"memory_max_bytes": 1024}}).cache.memory_max_bytes == 1024


def test_kept_token_views_stay_within_their_byte_bound(minilm_embedder: MiniLMEmbedder) -> None:
    """Long questions hold about 3 KB of token states per token: 60 of 250 tokens would hold 47 MB under
    the count bound alone (256 questions); the byte bound keeps fewer."""
    model = minilm_embedder.model
    wanted = model._views_wanted
    model._recent_views.clear()
    words = " ".join(f"word{i}" for i in range(120))  # about 250 tokens
    try:
        minilm_embedder.token_views_sync(["an example"])  # views are wanted from now on: questions keep theirs
        questions = [f"question {n}: {words}" for n in range(60)]
        for start in range(0, 60, 12):
            model.encode_questions(questions[start : start + 12])
        kept = model._recent_views
        assert kept.bytes <= RECENT_VIEWS_BYTES and 0 < len(kept) < 60
        assert kept.bytes > 0.9 * RECENT_VIEWS_BYTES
    finally:
        model._recent_views.clear()  # the model is shared by the session's tests: as it was
        model._views_wanted = wanted
