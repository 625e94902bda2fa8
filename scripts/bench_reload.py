#!/usr/bin/env python3
"""Hot-reload benchmark: with 10,000 templates loaded in a running server, how long from saving one
changed template until a question routes to it (file watcher + reload + re-index), and how long a
full reindex takes. Prints one JSON line.

    .venv/bin/python scripts/bench_reload.py [--templates 10000] [--trials 5] [--cache PATH]

The server is the real one (RuntimeHolder + aiohttp app + file watcher) on 127.0.0.1. The first run
embeds every template text once (minutes on two cores); the embedding cache (--cache) makes later runs warm.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp import web  # noqa: E402

from server.runtime.build import build_runtime  # noqa: E402
from server.runtime.holder import RuntimeHolder  # noqa: E402
from server.runtime.loader import load_config  # noqa: E402
from server.runtime.watcher import attach_watcher  # noqa: E402
from server.testing.configs import make_people_db  # noqa: E402
from server.web.app import create_app  # noqa: E402

TOPICS = [
    "invoices",
    "shipments",
    "tickets",
    "payroll",
    "inventory",
    "leads",
    "contracts",
    "assets",
    "claims",
    "subscriptions",
    "refunds",
    "audits",
    "budgets",
    "vendors",
    "trainings",
    "incidents",
    "returns",
]
VERBS = ["List", "Count", "Summarise", "Show", "Total", "Rank", "Find", "Compare"]
SLICES = [
    "by region",
    "per month",
    "for the last quarter",
    "by owner",
    "by status",
    "per customer segment",
    "by priority",
    "per warehouse",
    "by product line",
    "per team",
]


def build_tree(root: Path, templates: int, adapters: int, files_per_adapter: int, cache: Path) -> Path:
    make_people_db(root / "templates" / "people.db")
    (root / "config" / "adapters").mkdir(parents=True, exist_ok=True)
    (root / "config" / "config.yaml").write_text(
        f"embedding:\n  provider: minilm\n  cache: {{enabled: true, path: {json.dumps(str(cache))}}}\n"
        "store: {backend: memory}\n"
    )
    lines = ["adapters:"]
    for a in range(adapters):
        lines += [
            f"  - name: source{a}",
            "    type: sql",
            '    connection: {url: "sqlite:///templates/people.db"}',
            f'    templates: ["templates/source{a}/*.yaml"]',
            "    confidence_threshold: 0.3",
        ]
    (root / "config" / "adapters" / "bench.yaml").write_text("\n".join(lines) + "\n")
    per_file = templates // (adapters * files_per_adapter)
    n = 0
    for a in range(adapters):
        folder = root / "templates" / f"source{a}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(files_per_adapter):
            out = ["templates:"]
            for _ in range(per_file):
                verb, topic = VERBS[n % len(VERBS)], TOPICS[(n // 8) % len(TOPICS)]
                piece = SLICES[(n // 136) % len(SLICES)]
                out += [
                    f"  - id: t{n}",
                    f"    description: {verb} {topic} {piece} (report {n})",
                    f'    nl_examples: ["{verb.lower()} the {topic} {piece}, report {n}", '
                    f'"report {n}: {topic} {piece}"]',
                    "    parameters:",
                    "      - {name: department, type: string, default: Sales}",
                    f'    sql: "SELECT name FROM people WHERE department = :department LIMIT {1 + n % 5}"',
                ]
                n += 1
            (folder / f"lib{f}.yaml").write_text("\n".join(out) + "\n")
    past = time.time() - 3600  # as if written long before the server started, like real files
    for path in root.rglob("*.yaml"):
        os.utime(path, (past, past))
    return root / "config"


async def routed_to(session: aiohttp.ClientSession, question: str, adapter: str) -> str | None:
    async with session.post("/v1/test_routing", json={"query": question, "adapter": adapter}) as resp:
        body = await resp.json()
    return (body.get("routing_decision") or {}).get("selected_template")


async def measure_edits(config_dir: Path, trials: int, adapters: int, files: int) -> dict:
    holder = RuntimeHolder(config_dir)
    started = time.perf_counter()
    runtime = await holder.start()
    start_seconds = time.perf_counter() - started
    count = sum(len(t) for t in runtime.config.templates.values())
    app = create_app(holder)
    watcher = attach_watcher(app, holder)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    await asyncio.wait_for(watcher.ready.wait(), 10)
    latencies, reloads, parsed, embedded, query_ms = [], [], [], [], []
    try:
        async with aiohttp.ClientSession(base_url=f"http://{host}:{port}") as session:
            for trial in range(trials):
                a, f = (trial * 3) % adapters, (trial * 7) % files
                path = config_dir.parent / "templates" / f"source{a}" / f"lib{f}.yaml"
                text = path.read_text()
                tid = text.split("  - id: ", 2)[1].split("\n", 1)[0]
                probe = f"where did the zebra herd {uuid.uuid4().hex[:6]} migrate last spring"
                assert await routed_to(session, probe, f"source{a}") != tid
                marker = 'nl_examples: ["'
                edited = text.replace(marker, f'nl_examples: ["{probe}", "', 1)
                seen = watcher.reloads
                t0 = time.perf_counter()
                path.write_text(edited)
                while True:
                    q = time.perf_counter()
                    got = await routed_to(session, probe, f"source{a}")
                    query_ms.append((time.perf_counter() - q) * 1000)
                    if got == tid:
                        break
                    if time.perf_counter() - t0 > 30:
                        raise RuntimeError("the edit never became routable")
                    await asyncio.sleep(0.02)  # poll gently: the server shares two cores with us
                latencies.append(time.perf_counter() - t0)
                while watcher.reloads == seen:
                    await asyncio.sleep(0.01)
                status = holder.last_load
                reloads.append(status.seconds)
                parsed.append(status.changes.get("files_parsed"))
                embedded.append(status.changes.get("texts_embedded"))
                await asyncio.sleep(0.3)
            # an adapter-file edit: config.yaml / adapters/*.yaml changes take the full-parse path
            adapter_file = config_dir / "adapters" / "bench.yaml"
            adapter_file.write_text(
                adapter_file.read_text().replace("confidence_threshold: 0.3", "confidence_threshold: 0.31", 1)
            )
            t0 = time.perf_counter()
            full_status = await holder.reload()
            full_reload = time.perf_counter() - t0
    finally:
        await runner.cleanup()
        await holder.close()
    return {
        "templates": count,
        "server_start_s": round(start_seconds, 3),
        "edit_to_routable_s": {
            "median": round(statistics.median(latencies), 3),
            "max": round(max(latencies), 3),
            "all": [round(x, 3) for x in latencies],
        },
        "reload_s": {"median": round(statistics.median(reloads), 3), "max": round(max(reloads), 3)},
        "library_files_parsed_per_reload": parsed,
        "texts_embedded_per_reload": embedded,
        "test_routing_ms_median_during_bench": round(statistics.median(query_ms), 2),
        "adapter_file_edit_full_reload_s": round(full_reload, 3),
        "adapter_file_edit_reload_ok": full_status.ok,
    }


async def measure_reindex(config_dir: Path) -> dict:
    t0 = time.perf_counter()
    loaded = load_config(config_dir)
    load_s = time.perf_counter() - t0
    runtime = await build_runtime(loaded, rebuild_stores=True)
    try:
        computed = sum(e.stats.computed for e in runtime.embedders.values() if hasattr(e, "stats"))
        texts = sum(r.texts_embedded for r in runtime.index_reports.values())
        return {
            "reindex_load_config_s": round(load_s, 3),
            "reindex_stores_s": round(runtime.build_seconds, 3),
            "reindex_total_s": round(load_s + runtime.build_seconds, 3),
            "reindex_texts": texts,
            "reindex_texts_computed_by_model": computed,
        }
    finally:
        await runtime.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=int, default=10_000)
    parser.add_argument("--adapters", type=int, default=10)
    parser.add_argument("--files-per-adapter", type=int, default=10)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=ROOT / "data" / "bench_reload" / "embedding_cache.sqlite3")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    cold = not args.cache.exists()
    with tempfile.TemporaryDirectory(prefix="bench_reload_") as tmp:
        config_dir = build_tree(Path(tmp), args.templates, args.adapters, args.files_per_adapter, args.cache.resolve())
        result = {
            "bench": "reload",
            "embedding_cache_cold_at_start": cold,
            "layout": {
                "adapters": args.adapters,
                "files_per_adapter": args.files_per_adapter,
                "templates_per_file": args.templates // (args.adapters * args.files_per_adapter),
                "texts_per_template": 3,
            },
        }
        result |= await measure_edits(config_dir, args.trials, args.adapters, args.files_per_adapter)
        result |= await measure_reindex(config_dir)
        result["bar_edit_to_routable_under_1s"] = result["edit_to_routable_s"]["max"] < 1.0
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
