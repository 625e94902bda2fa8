#!/usr/bin/env python3
"""Result cache: /v1/query-path latency of a cache hit vs a miss on the demo's `hr` adapter (SQLite).

The same questions are answered by two runtimes built from one demo tree, one with the result cache
off (every answer is a miss: the source runs) and one with it on after a warm-up pass (every answer is
a hit), interleaved so that both see the same machine. Prints one JSON line: p50 of the execute stage
and of the whole answer for each, and their ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.service.answer import answer
from server.testing.demo import seed_demo_tree

QUESTIONS = [
    "how many employees are in Engineering?",
    "list the active employees of the Sales department",
    "salary statistics per department",
    "who are the highest paid employees?",
    "headcount by department",
    "payroll versus budget per department",
]


def with_cache(config: Path, enabled: bool) -> Path:
    """A copy of the tree's config.yaml with the result cache on or off."""
    text = (config / "config.yaml").read_text()
    (config / "config.yaml").write_text(text + f"\nresult_cache: {{enabled: {str(enabled).lower()}}}\n")
    return config


async def main(rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        off_root, on_root = Path(tmp) / "off", Path(tmp) / "on"
        off = await build_runtime(load_config(with_cache(seed_demo_tree(off_root), False)))
        on = await build_runtime(load_config(with_cache(seed_demo_tree(on_root), True)))
        try:
            for q in QUESTIONS:  # warm-up: model, pools; fills the cache of `on`
                await answer(off.get("hr"), q)
                await answer(on.get("hr"), q)
            samples: dict[str, list[float]] = {"miss_execute": [], "hit_execute": [], "miss_total": [], "hit_total": []}
            for _ in range(rounds):
                for q in QUESTIONS:
                    for kind, runtime in (("miss", off), ("hit", on)):
                        started = time.perf_counter()
                        result = await answer(runtime.get("hr"), q)
                        total = (time.perf_counter() - started) * 1000
                        meta = result.response.metadata
                        if meta.status != "executed" or bool(meta.from_cache) != (kind == "hit"):
                            raise SystemExit(
                                f"unexpected answer for {q!r}: {meta.status}, from_cache={meta.from_cache}"
                            )
                        samples[f"{kind}_execute"].append((meta.timings_ms or {})["execute"])
                        samples[f"{kind}_total"].append(total)
        finally:
            await off.close()
            await on.close()
    p50 = {k: round(statistics.median(v), 3) for k, v in samples.items()}
    return {
        "benchmark": "result_cache_hit_vs_miss",
        "adapter": "hr (SQLite)",
        "answers_each": len(samples["hit_total"]),
        **{f"{k}_p50_ms": v for k, v in p50.items()},
        "execute_ratio_hit_over_miss": round(p50["hit_execute"] / p50["miss_execute"], 3),
        "total_ratio_hit_over_miss": round(p50["hit_total"] / p50["miss_total"], 3),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    print(json.dumps(asyncio.run(main(parser.parse_args().rounds))))
