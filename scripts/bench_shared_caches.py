#!/usr/bin/env python3
"""Shared caches in Redis vs in the process, in one run on this machine (Redis on 127.0.0.1:6379).

1. Rerank cache, per question: a lookup of `candidates` scores that all hit, in the process
   (RerankCache) vs in Redis (one MGET), interleaved; the bare baseline is what a hit saves, one call
   to a self-hosted /rerank server on loopback (the stand-in, so the real provider would cost more).
2. Embedding cache, at start: the vectors of `texts` template texts for a replica with an empty local
   file, from Redis (`embedding.cache.shared`) vs from a warm local file vs the bare baseline, the
   MiniLM encoder embedding them.

Prints one JSON line with p50s (ms) and ratios against the baselines; `uptime` load before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from server.embedding.cache import CachedEmbedder
from server.embedding.factory import shared_minilm
from server.embedding.minilm import MiniLMEmbedder
from server.embedding.shared_cache import SharedEmbeddingCacheSettings, SharedEmbeddings
from server.rerankers.base import RerankItem
from server.rerankers.cache import RerankCache, entry_id
from server.rerankers.rerank_api_reranker import RerankApiReranker
from server.rerankers.settings import RerankerSettings
from server.rerankers.shared_cache import RerankCacheSettings, SharedRerankCache
from server.testing.redis_server import ensure_redis
from server.testing.rerank_api_standin import RerankApiStandin


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def p50(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


async def rerank_part(url: str, candidates: int, rounds: int) -> dict:
    texts = [f"template {i}: list the things of kind {i}. Examples: show kind {i}" for i in range(candidates)]
    keys = [("hr", f"t{i}") for i in range(candidates)]
    memory = RerankCache(300, 10_000)
    shared = SharedRerankCache(RerankCacheSettings(backend="redis", url=url, key_prefix=f"bench:{uuid.uuid4().hex}:"))
    redis_cache = shared.for_composite("company", 300, 10_000)
    samples: dict[str, list[float]] = {"memory_hit": [], "redis_hit": [], "reranker_call": [], "redis_write": []}
    async with RerankApiStandin() as standin:
        settings = RerankerSettings(provider="rerank_api", api_format="tei", base_url=standin.base_url)
        reranker = RerankApiReranker("bench", settings, None)
        try:
            for r in range(rounds):
                question = f"how many things of kind {r % 50}?"
                ids = [entry_id("bench", question, k, t) for k, t in zip(keys, texts, strict=True)]
                started = time.perf_counter()
                scores = await reranker.rerank(question, [RerankItem(k, t) for k, t in zip(keys, texts, strict=True)])
                samples["reranker_call"].append((time.perf_counter() - started) * 1000)
                by_id = {ids[i]: scores[k] for i, k in enumerate(keys)}
                await memory.put_many(by_id)
                started = time.perf_counter()
                await redis_cache.put_many(by_id)
                samples["redis_write"].append((time.perf_counter() - started) * 1000)
                for kind, cache in (("memory_hit", memory), ("redis_hit", redis_cache)):
                    started = time.perf_counter()
                    found = await cache.get_many(ids)
                    samples[kind].append((time.perf_counter() - started) * 1000)
                    if len(found) != candidates:
                        raise SystemExit(f"{kind}: {len(found)} of {candidates} scores found")
        finally:
            await reranker.close()
            keys_left = await shared.link.client.keys(shared.prefix + "*")
            if keys_left:
                await shared.link.client.delete(*keys_left)
            await shared.close()
    m = {k: p50(v) for k, v in samples.items()}
    return {
        "rerank_candidates": candidates,
        "rerank_rounds": rounds,
        **{f"rerank_{k}_p50_ms": v for k, v in m.items()},
        "rerank_redis_hit_added_ms": round(m["redis_hit"] - m["memory_hit"], 3),
        "rerank_redis_hit_over_reranker_call": round(m["redis_hit"] / m["reranker_call"], 3),
    }


def embedding_part(url: str, count: int, repeats: int) -> dict:
    texts = [f"show the {i}th report of region {i % 7} for product line {i % 13}" for i in range(count)]
    encoder = MiniLMEmbedder(shared_minilm(None))
    encoder.embed_sync(texts[:8])  # load the model before timing
    settings = SharedEmbeddingCacheSettings(url=url, key_prefix=f"bench:{uuid.uuid4().hex}:emb:")
    samples: dict[str, list[float]] = {"encoder": [], "from_redis": [], "from_file": []}
    with tempfile.TemporaryDirectory() as tmp:
        warm = CachedEmbedder(encoder, Path(tmp) / "warm.sqlite3", shared=SharedEmbeddings(settings))
        warm.embed_sync(texts)  # fills the warm file and Redis
        for r in range(repeats):
            started = time.perf_counter()
            encoder.embed_sync(texts)
            samples["encoder"].append((time.perf_counter() - started) * 1000)
            fresh = CachedEmbedder(encoder, Path(tmp) / f"empty{r}.sqlite3", shared=SharedEmbeddings(settings))
            started = time.perf_counter()
            fresh.embed_sync(texts)
            samples["from_redis"].append((time.perf_counter() - started) * 1000)
            if fresh.stats.computed or fresh.stats.shared_hits != count:
                raise SystemExit(f"empty file: computed {fresh.stats.computed}, from Redis {fresh.stats.shared_hits}")
            local = CachedEmbedder(encoder, Path(tmp) / "warm.sqlite3")  # the file alone, no Redis
            started = time.perf_counter()
            local.embed_sync(texts)
            samples["from_file"].append((time.perf_counter() - started) * 1000)
            for cache in (fresh, local):
                asyncio.run(cache.close())
        client = warm.shared.link.client if warm.shared is not None else None
        if client is not None:
            left = client.keys(settings.key_prefix + "*")
            if left:
                client.delete(*left)
    m = {k: p50(v) for k, v in samples.items()}
    return {
        "embedding_texts": count,
        "embedding_repeats": repeats,
        **{f"embedding_{k}_p50_ms": v for k, v in m.items()},
        "embedding_from_redis_over_encoder": round(m["from_redis"] / m["encoder"], 4),
        "embedding_from_file_over_encoder": round(m["from_file"] / m["encoder"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    url = ensure_redis()
    before = load()
    result = {"benchmark": "shared_caches_redis_vs_process", "load_before": before}
    result.update(asyncio.run(rerank_part(url, args.candidates, args.rounds)))
    result.update(embedding_part(url, args.texts, args.repeats))
    result["load_after"] = load()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
