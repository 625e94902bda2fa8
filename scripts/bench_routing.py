#!/usr/bin/env python3
"""test_routing latency with 100, 1,000 and 10,000 templates over 10 children, per stage, and the
many-examples shape (150 templates x 100 examples: pasted chat logs).

Templates are synthetic but made of real sentences (BANKING77 train texts): a description and two
examples each (`--examples` changes it; the default run adds 150 templates x 100 examples). Questions
are BANKING77 test texts, each asked once, so every question is embedded for real (the template
embeddings come from a warm cache; question embeddings are never cached here). String similarity is
on, reranking off.

In the same run, for every question, the bare baseline: one numpy `X @ q` plus `argpartition` over
all the children's vectors stacked in one matrix (the same vectors the stores hold), timed right
after the question's search, and the same product in row blocks of 1,024 (under OpenBLAS's threading
threshold: one thread, which does not stall when another process holds a core);
`search_ratio` = search stage p50 / the faster bare p50 (issue 17's bar: <= 1.5).
Prints one JSON object per shape.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.runtime.build import build_runtime  # noqa: E402
from server.runtime.loader import load_config  # noqa: E402
from server.service.answer import explain_routing  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "banking77"
CHILDREN = 10


def texts(name: str) -> list[str]:
    with (DATA / name).open(newline="", encoding="utf-8") as fh:
        return [row["text"] for row in csv.DictReader(fh)]


def build_tree(root: Path, n_templates: int, cache: Path, pool: list[str], examples: int) -> Path:
    (root / "config" / "adapters").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "config" / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "embedding": {"provider": "minilm", "cache": {"enabled": True, "path": str(cache)}},
                "store": {"backend": "memory"},
            }
        )
    )
    per_child = n_templates // CHILDREN
    adapters = []
    for child in range(CHILDREN):
        templates = []
        for j in range(per_child):
            i = child * per_child + j
            first = (examples + 1) * i
            templates.append(
                {
                    "id": f"t{i}",
                    "description": pool[first % len(pool)],
                    "nl_examples": [pool[(first + 1 + e) % len(pool)] for e in range(examples)],
                    "sql": "SELECT 1 AS matched",
                }
            )
        (root / "templates" / f"c{child}.yaml").write_text(yaml.safe_dump({"templates": templates}))
        adapters.append(
            {
                "name": f"c{child}",
                "type": "duckdb",
                "connection": {"path": ":memory:"},
                "templates": [f"templates/c{child}.yaml"],
            }
        )
    adapters.append(
        {
            "name": "all",
            "type": "composite",
            "child_adapters": [f"c{i}" for i in range(CHILDREN)],
            "string_similarity": {"enabled": True},
            "reranking": {"enabled": False},
        }
    )
    (root / "config" / "adapters" / "bench.yaml").write_text(yaml.safe_dump({"adapters": adapters}))
    return root / "config"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def stacked_vectors(runtime) -> np.ndarray:
    """Every vector of every child's store, in one float32 matrix (the bare baseline's X)."""
    blocks = []
    for child in range(CHILDREN):
        store = runtime.get(f"c{child}").store
        blocks += [store.vectors_of(tid) for tid in store.template_hashes()]
    return np.ascontiguousarray(np.vstack(blocks), dtype=np.float32)


async def bench(n: int, examples: int, questions: list[str], pool: list[str], template_cache: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache.sqlite3"
        if template_cache.exists():
            shutil.copy(template_cache, cache)  # warm template embeddings; questions stay uncached
        t = time.perf_counter()
        runtime = await build_runtime(load_config(build_tree(Path(tmp), n, cache, pool, examples)))
        index_seconds = time.perf_counter() - t
        await runtime.close()
        template_cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cache, template_cache)
        runtime = await build_runtime(load_config(build_tree(Path(tmp) / "again", n, cache, pool, examples)))
        try:
            composite = runtime.get("all")
            matrix = stacked_vectors(runtime)
            top = min(len(matrix) - 1, composite.routing_policy().max_templates_per_source * CHILDREN)
            embedder = runtime.get("c0").embedder
            for q in questions[:5]:  # warm-up (thread pool, caches of the numpy store)
                await explain_routing(composite, q + " warmup")
            stages: dict[str, list[float]] = {}
            bare: list[float] = []
            bare_blocks: list[float] = []  # the same product in row blocks that OpenBLAS runs on one thread
            blocks = [matrix[i : i + 1024] for i in range(0, len(matrix), 1024)]
            for q in questions[5:]:
                outcome = (await explain_routing(composite, q)).outcome
                for stage, ms in outcome.timings_ms.items():
                    stages.setdefault(stage, []).append(ms)
                vector = await embedder.embed_query(q)  # the question's vector (in-memory cache hit)
                t = time.perf_counter()
                np.argpartition(matrix @ vector, -top)[-top:]
                bare.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                scores = np.concatenate([block @ vector for block in blocks])
                np.argpartition(scores, -top)[-top:]
                bare_blocks.append((time.perf_counter() - t) * 1000)
        finally:
            await runtime.close()
    total = stages["total"]
    return {
        "benchmark": "test_routing_latency",
        "templates": n,
        "examples_per_template": examples,
        "vectors": len(matrix),
        "children": CHILDREN,
        "questions": len(total),
        "string_similarity": True,
        "reranking": False,
        "p50_ms": pct(total, 0.5),
        "p99_ms": pct(total, 0.99),
        "mean_ms": round(statistics.fmean(total), 3),
        "stages": {s: {"p50_ms": pct(v, 0.5), "p99_ms": pct(v, 0.99)} for s, v in stages.items() if s != "total"},
        "first_index_seconds": round(index_seconds, 2),
        "bare_matmul_argpartition_p50_ms": pct(bare, 0.5),
        "bare_one_thread_p50_ms": pct(bare_blocks, 0.5),
        "search_ratio": round(pct(stages["search"], 0.5) / min(pct(bare, 0.5), pct(bare_blocks, 0.5)), 2),
        "search_ratio_bar": 1.5,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=int, action="append", help="template counts (repeatable)")
    parser.add_argument("--examples", type=int, default=2, help="nl_examples per template with --templates")
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--cache", type=Path, default=ROOT / "data" / "bench_routing_cache.sqlite3")
    args = parser.parse_args()
    pool = texts("train.csv")
    questions = texts("test.csv")[: args.questions + 5]
    shapes = (
        [(n, args.examples) for n in args.templates]
        if args.templates
        else [(100, 2), (1000, 2), (10000, 2), (150, 100)]
    )
    for n, examples in shapes:
        print(json.dumps(asyncio.run(bench(n, examples, questions, pool, args.cache))), flush=True)


if __name__ == "__main__":
    main()
