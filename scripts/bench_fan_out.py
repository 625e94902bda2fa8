"""Benchmark: a fan-out answer's execution time vs its slowest source asked alone, same run.

The customer composite (server/testing/customer.py): a SQLite CRM, MongoDB orders (SecantusDB in-process) and
a support-desk JSON API on loopback that waits `--api-delay` seconds per request (a remote API's latency).
The result cache is off, so every round reaches the sources. Each round asks every planned source alone,
one after another (`fan_out.run_source`: parameter extraction + `DataAdapter.run`), then all of them at once
as a fan-out answer does (`asyncio.gather` of the same calls). Bar: fan-out / slowest-alone close to 1
(parallel), against sum-of-sources / fan-out (what running them one by one would cost).
Prints one JSON line per source, then a summary line.

Usage (from the repo root): python scripts/bench_fan_out.py [--rounds 50] [--warmup 5] [--api-delay 0.05]
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
from server.service import fan_out
from server.service.answer import router_for
from server.testing.configs import BASE_CONFIG
from server.testing.customer import QUESTION, customer_tree, running_support_desk
from server.testing.mongo import running_mongo


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


async def run(rounds: int, warmup: int, api_delay: float) -> dict:
    config = BASE_CONFIG + "result_cache: {enabled: false}\n"
    with running_mongo("bench_fan_out") as mongo, tempfile.TemporaryDirectory() as tmp:
        async with running_support_desk() as desk:
            desk.slow_seconds = api_delay
            tree = customer_tree(Path(tmp), mongo, desk.url, "    execution: fan_out\n", config)
            runtime = await build_runtime(load_config(tree))
            try:
                composite = runtime.get("customer")
                sources = {s.name: s for s in composite.routing_sources()}
                outcome = await router_for(composite).route(QUESTION, list(sources.values()))
                planned = fan_out.plan(composite, outcome).run
                alone: dict[str, list[float]] = {c.adapter: [] for c in planned}
                slowest: list[float] = []
                summed: list[float] = []
                together: list[float] = []
                for i in range(warmup + rounds):
                    this_round = {}
                    for c in planned:
                        t = time.perf_counter()
                        result = await fan_out.run_source(sources[c.adapter], c, QUESTION)
                        this_round[c.adapter] = _ms(t)
                        assert result.status == "ok", (c.adapter, result.error)
                    t = time.perf_counter()
                    runs = await asyncio.gather(*(fan_out.run_source(sources[c.adapter], c, QUESTION) for c in planned))
                    fanned = _ms(t)
                    assert all(r.status == "ok" for r in runs)
                    if i >= warmup:
                        for name, ms in this_round.items():
                            alone[name].append(ms)
                        slowest.append(max(this_round.values()))
                        summed.append(sum(this_round.values()))
                        together.append(fanned)
            finally:
                await runtime.close()
    for name, values in alone.items():
        print(json.dumps({"source": name, "alone_median_ms": round(statistics.median(values), 3)}), flush=True)
    slow, fan, total = statistics.median(slowest), statistics.median(together), statistics.median(summed)
    return {
        "summary": {
            "sources": [c.adapter for c in planned],
            "api_delay_s": api_delay,
            "rounds": rounds,
            "slowest_alone_median_ms": round(slow, 3),
            "sum_alone_median_ms": round(total, 3),
            "fan_out_median_ms": round(fan, 3),
            "fan_out_vs_slowest_ratio": round(fan / slow, 3),
            "sequential_vs_fan_out_ratio": round(total / fan, 3),
        }
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--api-delay", type=float, default=0.05, help="seconds the support-desk API waits")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.rounds, args.warmup, args.api_delay))), flush=True)


if __name__ == "__main__":
    main()
