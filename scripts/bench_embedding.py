#!/usr/bin/env python
"""Benchmark the local embedding model and its cache; prints one JSON object.

Measures: cold load (graph built from the weights vs. reused from disk), single short query
latency (sync and through the async path), batch throughput, and cache hit timings.
Run from the repo root: `python scripts/bench_embedding.py [--queries 300] [--threads N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SUBJECTS = [
    "employees",
    "orders",
    "invoices",
    "customers",
    "refunds",
    "shipments",
    "my card",
    "my transfer",
    "the sales team",
    "revenue",
    "support tickets",
    "warehouse stock",
    "my account",
    "the Berlin office",
]
ASKS = [
    "how many {s} are there",
    "show me {s}",
    "list all {s} from last week",
    "why is {s} late",
    "what happened to {s}",
    "top 10 {s} by value",
    "who is responsible for {s}",
    "can I cancel {s}",
    "total {s} in Q3",
    "{s} per region this year",
]
FILLER = [
    "please",
    "quickly",
    "for the board meeting",
    "in Engineering",
    "compared with last month",
    "since January",
    "that were flagged",
    "with the highest amount",
    "grouped by country",
    "again",
]


def short_queries(n: int, rng: random.Random) -> list[str]:
    """Distinct short questions (5-12 words), like those a chat backend routes."""
    out: set[str] = set()
    while len(out) < n:
        q = rng.choice(ASKS).format(s=rng.choice(SUBJECTS))
        if rng.random() < 0.5:
            q += " " + rng.choice(FILLER)
        out.add(q + "?" if len(out) % 2 else q)
    return sorted(out, key=lambda _: rng.random())


def sentences(n: int, rng: random.Random) -> list[str]:
    """Distinct sentences of 6-40 words: template descriptions and examples of mixed length."""
    out: set[str] = set()
    while len(out) < n:
        parts = [rng.choice(ASKS).format(s=rng.choice(SUBJECTS)) for _ in range(rng.randint(1, 4))]
        out.add(", ".join(parts) + " " + " ".join(rng.sample(FILLER, rng.randint(0, 3))))
    return sorted(out, key=lambda _: rng.random())


def ms_stats(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 3),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 3),
        "max_ms": round(ms[-1], 3),
    }


def timed_each(fn, items: list) -> list[float]:
    times = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - t)
    return times


async def async_single(embedder, queries: list[str]) -> list[float]:
    times = []
    for q in queries:
        t = time.perf_counter()
        await embedder.embed([q])
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300, help="single-query samples (>= 200)")
    parser.add_argument("--sentences", type=int, default=1000, help="sentences for the throughput run")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads (default: auto)")
    parser.add_argument("--spinning", action="store_true", help="let onnxruntime workers spin between runs")
    args = parser.parse_args()
    rng = random.Random(7)

    t = time.perf_counter()
    import onnxruntime
    import tokenizers

    from server.embedding.cache import CachedEmbedder
    from server.embedding.minilm import MODEL_ID, MiniLMEmbedder, MiniLMModel, default_threads

    import_seconds = time.perf_counter() - t

    result: dict[str, object] = {
        "model": MODEL_ID,
        "runtime": f"onnxruntime {onnxruntime.__version__} (CPU) + tokenizers {tokenizers.__version__}",
        "cpu_count": os.cpu_count(),
        "intra_op_threads": args.threads or default_threads(),
        "spinning": args.spinning,
        "loadavg_1min_at_start": round(os.getloadavg()[0], 2),  # other work on the box skews every figure
    }
    with tempfile.TemporaryDirectory() as tmp:
        graph_dir = Path(tmp) / "models"
        t = time.perf_counter()
        model = MiniLMModel(graph_dir, threads=args.threads, spinning=args.spinning)
        cold_build = time.perf_counter() - t
        t = time.perf_counter()
        reloaded = MiniLMModel(graph_dir, threads=args.threads, spinning=args.spinning)
        cold_reuse = time.perf_counter() - t
        assert not reloaded.load_info.graph_built
        del reloaded
        result["cold_load_seconds"] = {
            "imports": round(import_seconds, 3),
            "first_start_graph_built": round(cold_build, 3),
            "of_which_graph_build": round(model.load_info.graph_seconds, 3),
            "later_starts_graph_reused": round(cold_reuse, 3),
        }

        embedder = MiniLMEmbedder(model, batch_size=args.batch_size)
        queries = short_queries(max(args.queries, 200), rng)
        embedder.embed_sync(queries[:20])  # warm-up: first runs allocate
        for q in queries[:10]:
            embedder.embed_sync([q])
        result["single_query"] = ms_stats(timed_each(lambda q: embedder.embed_sync([q]), queries))
        result["single_query_async"] = ms_stats(asyncio.run(async_single(embedder, queries)))

        corpus = sentences(args.sentences, rng)
        t = time.perf_counter()
        embedder.embed_sync(corpus)
        batch_seconds = time.perf_counter() - t
        result["batch"] = {
            "sentences": len(corpus),
            "batch_size": args.batch_size,
            "seconds": round(batch_seconds, 3),
            "sentences_per_second": round(len(corpus) / batch_seconds, 1),
        }

        cache_path = Path(tmp) / "embedding_cache.sqlite3"
        cache = CachedEmbedder(embedder, cache_path)
        t = time.perf_counter()
        cache.embed_sync(corpus)
        fill_seconds = time.perf_counter() - t
        memory_hits = timed_each(lambda q: cache.embed_sync([q]), corpus[:300])
        asyncio.run(cache.close())
        restarted = CachedEmbedder(embedder, cache_path)
        disk_single = timed_each(lambda q: restarted.embed_sync([q]), corpus[:300])
        t = time.perf_counter()
        restarted.embed_sync(corpus)  # first 300 from memory, the rest from disk
        warm_batch = time.perf_counter() - t
        fresh = CachedEmbedder(embedder, cache_path)
        t = time.perf_counter()
        fresh.embed_sync(corpus)
        disk_batch = time.perf_counter() - t
        assert fresh.stats.computed == 0 and restarted.stats.computed == 0
        result["cache"] = {
            "fill_1000_misses_seconds": round(fill_seconds, 3),
            "memory_hit_single": ms_stats(memory_hits),
            "disk_hit_single_after_restart": ms_stats(disk_single),
            "disk_hit_batch_after_restart_seconds": round(disk_batch, 4),
            "mixed_memory_disk_batch_seconds": round(warm_batch, 4),
            "restart_recomputed": fresh.stats.computed,
        }
        asyncio.run(restarted.close())
        asyncio.run(fresh.close())
    result["loadavg_1min_at_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
