#!/usr/bin/env python3
"""Overhead of the routing log on POST /v1/query: logging on vs off, in the same run.

Builds two identical throwaway config trees (a SQLite source with a few templates) that differ only in
`stats.enabled`, serves both from this process on loopback, and sends the same questions to each in
interleaved rounds so that drift (CPU boost, caches) hits both modes alike. After each "on" round the
log is flushed inside that round's time, so its batch writes count against "on" (throughput, rps).
Prints JSON lines: one per mode and a summary with the overhead.

    .venv/bin/python scripts/bench_logging.py [--requests 600] [--concurrency 1] [--round 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from server.runtime.holder import RuntimeHolder
from server.testing.loopback import serving
from server.web.app import create_app
from server.web.routing_log import STATS_LOG

LIBRARY = """
templates:
  - id: staff_in_department
    description: List the people who work in a department
    nl_examples: ["Who works in Engineering?", "Show me the people in Sales", "list staff of the HR department"]
    parameters:
      - {name: department, type: string, required: true, allowed_values: [Engineering, Sales, HR]}
    sql: "SELECT name FROM people WHERE department = :department ORDER BY name"
  - id: headcount_by_department
    description: Count how many people work in each department
    nl_examples: ["How many people are in each department?", "headcount per department"]
    sql: "SELECT department, COUNT(*) AS n FROM people GROUP BY department ORDER BY department"
  - id: top_earners
    description: The best paid people
    nl_examples: ["Who earns the most?", "top salaries"]
    sql: "SELECT name, salary FROM people ORDER BY salary DESC LIMIT 5"
"""
QUESTIONS = [
    "who works in Engineering?",
    "headcount per department",
    "who earns the most?",
    "show me the people in Sales",
    "what is the boiling point of mercury?",
    "top salaries please",
]


def build_tree(root: Path, logging_on: bool) -> Path:
    (root / "config" / "adapters").mkdir(parents=True)
    (root / "templates" / "people").mkdir(parents=True)
    stats = "{store_queries: true}" if logging_on else "{enabled: false}"
    (root / "config" / "config.yaml").write_text(
        "embedding: {provider: minilm, cache: {enabled: true, path: data/embedding_cache.sqlite3}}\n"
        f"store: {{backend: memory}}\nstats: {stats}\n"
    )
    (root / "config" / "adapters" / "people.yaml").write_text(
        'adapters:\n  - name: people\n    type: sql\n    connection: {url: "sqlite:///templates/people.db"}\n'
        '    templates: ["templates/people/*.yaml"]\n    confidence_threshold: 0.3\n'
    )
    (root / "templates" / "people" / "people.yaml").write_text(LIBRARY)
    con = sqlite3.connect(root / "templates" / "people.db")
    con.executescript("CREATE TABLE people (name TEXT, department TEXT, salary REAL);")
    rng = random.Random(1)
    con.executemany(
        "INSERT INTO people VALUES (?, ?, ?)",
        [(f"person{i}", rng.choice(["Engineering", "Sales", "HR"]), rng.randint(40, 200) * 1000) for i in range(200)],
    )
    con.commit()
    con.close()
    return root / "config"


@contextlib.asynccontextmanager
async def started(config: Path) -> AsyncIterator[tuple[web.Application, str]]:
    """The app over `config` served on a loopback port: (app, its /v1/query URL)."""
    holder = RuntimeHolder(config)
    await holder.start()
    try:
        app = create_app(holder)
        async with serving(app) as base:
            yield app, f"{base}/v1/query"
    finally:
        await holder.close()


async def burst(session: aiohttp.ClientSession, url: str, questions: list[str], concurrency: int) -> list[float]:
    latencies: list[float] = []
    queue = list(questions)

    async def worker() -> None:
        while queue:
            question = queue.pop()
            t = time.perf_counter()
            async with session.post(url, json={"query": question}) as resp:
                await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"HTTP {resp.status}")
            latencies.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def summary(mode: str, lat: list[float], seconds: float) -> dict:
    lat = sorted(lat)
    return {
        "mode": mode,
        "requests": len(lat),
        "mean_ms": round(statistics.fmean(lat), 3),
        "p50_ms": round(statistics.median(lat), 3),
        "p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 3),
        "p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 3),
        "rps": round(len(lat) / seconds, 1),
    }


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with contextlib.AsyncExitStack() as stack:
            servers = {
                mode: await stack.enter_async_context(started(build_tree(Path(tmp) / mode, mode == "on")))
                for mode in ("on", "off")
            }
            rng = random.Random(42)
            lat: dict[str, list[float]] = {"on": [], "off": []}
            spent = {"on": 0.0, "off": 0.0}
            async with aiohttp.ClientSession() as session:
                for mode in ("on", "off"):  # warm-up: model, caches, connection pools
                    await burst(session, servers[mode][1], QUESTIONS * 5, args.concurrency)
                rounds = max(1, args.requests // args.round)
                for _ in range(rounds):
                    questions = [rng.choice(QUESTIONS) for _ in range(args.round)]
                    order = ["on", "off"]
                    rng.shuffle(order)
                    for mode in order:
                        t = time.perf_counter()
                        lat[mode] += await burst(session, servers[mode][1], questions, args.concurrency)
                        if mode == "on":  # the round's log writes count against "on", not the next round
                            await servers["on"][0][STATS_LOG].flush()
                        spent[mode] += time.perf_counter() - t
            rlog = servers["on"][0][STATS_LOG]
            await rlog.flush()
            log_status = rlog.status()
    on, off = summary("on", lat["on"], spent["on"]), summary("off", lat["off"], spent["off"])
    print(json.dumps({**on, "concurrency": args.concurrency}))
    print(json.dumps({**off, "concurrency": args.concurrency}))
    print(
        json.dumps(
            {
                "bench": "routing_log_overhead",
                "concurrency": args.concurrency,
                "requests_per_mode": on["requests"],
                "p50_overhead_ms": round(on["p50_ms"] - off["p50_ms"], 3),
                "mean_overhead_ms": round(on["mean_ms"] - off["mean_ms"], 3),
                "mean_overhead_pct": round(100 * (on["mean_ms"] - off["mean_ms"]) / off["mean_ms"], 2),
                "p95_overhead_ms": round(on["p95_ms"] - off["p95_ms"], 3),
                "throughput_change_pct": round(100 * (on["rps"] - off["rps"]) / off["rps"], 2),
                "log_written": log_status["written"],
                "log_dropped": log_status["dropped"],
                "log_batches": log_status["batches"],
                "log_backend": log_status["backend"],
                "log_write_ms_per_entry": round(1000 * log_status["write_seconds"] / max(1, log_status["written"]), 4),
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600, help="requests per mode")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--round", type=int, default=20, help="requests per interleaved round")
    asyncio.run(main(parser.parse_args()))
