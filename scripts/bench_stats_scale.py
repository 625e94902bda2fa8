#!/usr/bin/env python3
"""Statistics over a large routing log, against a bare GROUP BY over the same raw rows (issue 34, item 2).

For each backend (SQLite file; PostgreSQL at 127.0.0.1:5432 db test when reachable): writes `--rows` entries
spread over the last 24 hours through the project's own writer (RoutingLog.record + flush: raw rows and
rollups in one transaction per batch), then times, interleaved and `--repeat` times each:
  - statistics: the endpoint's compute() over the 24 h window (what GET /v1/routing/statistics runs);
  - bare: one `SELECT outcome, count(*) FROM <log> GROUP BY outcome` over the same raw rows;
  - dashboard: the dashboard's load through the real app on loopback (its page, script, style sheet and its
    statistics request: view=dashboard, kind=query, since=1h as it opens, and since=24h);
and the RSS of this process around each statistics call. Prints JSON; `run()` is what scripts/bench_scale.py
calls. Figures are medians; ratio = statistics / bare, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sqlalchemy as sa

from server.stats import RoutingLog, RoutingRecord, StatsSettings
from server.stats.aggregates import Window, compute

DAY = 86400
CHILDREN = ("hr", "sales", "finance", "support", "inventory")
STAGES = ("embedding", "intent_model", "lexical", "rerank")
TIMED = ("embed", "search", "embedding", "intent_model", "lexical", "rerank", "decision", "parameters", "execute")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def entries(count: int, now: float, seed: int = 34) -> list[RoutingRecord]:
    """A composite "company" over five sources, 50 templates, ~12 questions a second over the last day."""
    rnd = random.Random(seed)
    questions = [f"unmatched question number {i}" for i in range(3000)]
    out = []
    for i in range(count):
        roll = rnd.random()
        outcome = "executed" if roll < 0.8 else "no_match" if roll < 0.92 else "error" if roll < 0.94 else "ambiguous"
        source = rnd.choice(CHILDREN) if outcome != "no_match" else None
        template = f"{source}_t{rnd.randrange(10)}" if source and outcome != "error" else None
        score = rnd.uniform(0.55, 0.98) if template else rnd.uniform(0.05, 0.5)
        stage_ms = {s: rnd.lognormvariate(0, 1) for s in TIMED if s != "execute" or outcome == "executed"}
        out.append(
            RoutingRecord(
                ts=now - DAY + (i + rnd.random()) * DAY / count,
                kind="test_routing" if rnd.random() < 0.05 else "query",
                adapter="company",
                outcome=outcome,
                reason="selected" if template else "below_threshold",
                selected_adapter=source,
                template_id=template,
                combined_score=score,
                embedding_score=score * 0.95,
                stage_scores={s: rnd.random() for s in STAGES},
                threshold=0.5,
                candidates=5,
                error_code="source_unavailable" if outcome == "error" else None,
                http_status=503 if outcome == "error" else 200,
                question=rnd.choice(questions) if outcome == "no_match" else "a routed question",
                latency_ms=sum(stage_ms.values()),
                stage_ms=stage_ms,
                replica="replica-a",
            )
        )
    return out


async def write(rlog: RoutingLog, rows: int, now: float) -> tuple[float, float]:
    """Seconds to make the entries, seconds for the writer to take and write them (in chunks the queue holds)."""
    made = time.perf_counter()
    todo = entries(rows, now)
    making = time.perf_counter() - made
    started = time.perf_counter()
    chunk = rlog.settings.queue_size
    for first in range(0, len(todo), chunk):
        for entry in todo[first : first + chunk]:
            if not rlog.record(entry):
                raise RuntimeError("the routing log dropped an entry")
        await rlog.flush()
    return making, time.perf_counter() - started


def timed(fn, cpu: list[float] | None = None) -> float:
    """Wall seconds of fn(); its CPU seconds in this process appended to `cpu` (on SQLite, the database's
    work is in this process too: a figure the machine's load disturbs less than the wall time)."""
    started, used = time.perf_counter(), time.process_time()
    fn()
    if cpu is not None:
        cpu.append(time.process_time() - used)
    return time.perf_counter() - started


async def dashboard_load(url: str | None, path: Path, table: str, work: Path) -> dict[str, float]:
    """The dashboard opening (page, assets, its statistics request) through the real app on loopback."""
    from server.testing.app import running_app
    from server.testing.configs import BASE_CONFIG, people_tree

    where = f"url: '{url}'" if url else f"path: '{path}'"
    config = people_tree(work, BASE_CONFIG + f"stats: {{{where}, table: {table}, store_queries: true}}\n")
    out: dict[str, float] = {}
    async with running_app(config) as (client, _):
        for since in ("1h", "24h", "1h", "24h", "1h", "24h"):
            started = time.perf_counter()
            for asset in ("/dashboard", "/dashboard/assets/dashboard.js", "/dashboard/assets/dashboard.css"):
                resp = await client.get(asset)
                await resp.read()
            resp = await client.get(f"/v1/routing/statistics?since={since}&kind=query&view=dashboard")
            body = await resp.json()
            if resp.status != 200 or not body["routing_log"]["total"]:
                raise RuntimeError(f"dashboard statistics failed: {resp.status}")
            out.setdefault(since, []).append(time.perf_counter() - started)  # type: ignore[attr-defined]
    return {f"dashboard_seconds_{k}": round(statistics.median(v), 4) for k, v in out.items()}  # type: ignore[arg-type]


async def one_backend(backend: str, rows: int, repeat: int, work: Path, keep: str | None = None) -> dict[str, Any]:
    url = None
    if backend == "postgresql":
        from server.testing import pg

        url = pg.reachable_url()
        if url is None:
            return {"backend": backend, "skipped": "no PostgreSQL at 127.0.0.1:5432"}
    table = keep or f"bench_log_{uuid.uuid4().hex[:8]}"
    path = work / "routing_log.sqlite3"
    settings = StatsSettings(url=url, path=str(path), table=table, store_queries=True, retention_days=36500)
    rlog = RoutingLog(settings, work)
    await rlog.start()
    now = time.time()
    earlier = 0
    if keep is not None:  # a log this script wrote before and kept: time only the reads (on a quieter machine)
        with rlog.engine.connect() as conn:
            earlier = conn.execute(sa.select(sa.func.count()).select_from(rlog.table)).scalar_one()
    try:
        making, writing = await write(rlog, rows, now) if not earlier else (0.0, 0.0)
        print(f"{backend}: {rows} entries written in {writing:.1f} s", file=sys.stderr, flush=True)
        engine, raw = rlog.engine, rlog.table
        window = Window(now - DAY, time.time())
        bare = sa.select(raw.c.outcome, sa.func.count()).group_by(raw.c.outcome)
        stats_s, bare_s, rss, stats_cpu, bare_cpu, every_unmatched = [], [], [], [], [], []
        for _ in range(repeat):
            gc.collect()
            before = rss_mb()
            stats_s.append(timed(lambda: compute(engine, raw, window, rlog.rollups), stats_cpu))
            rss.append(rss_mb() - before)
            with engine.connect() as conn:
                bare_s.append(timed(lambda conn=conn: conn.execute(bare).all(), bare_cpu))
            # the same with the unmatched list over every unmatched entry of the window (max_window_rows = rows)
            every_unmatched.append(timed(lambda: compute(engine, raw, window, rlog.rollups, 15, "full", rows)))
        figures = compute(engine, raw, window, rlog.rollups)
        await rlog.close()
        board = await dashboard_load(url, path, table, work / "app")
        stats_median, bare_median = statistics.median(stats_s), statistics.median(bare_s)
        return {
            "backend": backend,
            "rows": earlier or rows,
            "written_by_an_earlier_run": bool(earlier),
            "total_in_window": figures["total"],
            "make_entries_seconds": round(making, 2),
            "write_seconds": round(writing, 2),
            "write_entries_per_second": round(rows / writing) if writing else None,
            "write_batches": rlog.counters.batches,
            "statistics_seconds": round(stats_median, 4),
            "bare_group_by_seconds": round(bare_median, 4),
            "ratio": round(stats_median / bare_median, 3) if bare_median else None,
            "statistics_seconds_all": [round(s, 4) for s in stats_s],
            "statistics_seconds_every_unmatched": round(statistics.median(every_unmatched), 4),
            # SQLite only (PostgreSQL works in its own processes): CPU seconds of this process, medians
            **(
                {
                    "statistics_cpu_seconds": round(statistics.median(stats_cpu), 4),
                    "bare_group_by_cpu_seconds": round(statistics.median(bare_cpu), 4),
                    "cpu_ratio": round(statistics.median(stats_cpu) / max(statistics.median(bare_cpu), 1e-9), 3),
                }
                if backend == "sqlite"
                else {}
            ),
            "bare_group_by_seconds_all": [round(s, 4) for s in bare_s],
            **board,
            "rss_delta_mb_per_call": [round(r, 1) for r in rss],
            "rss_delta_mb_max": round(max(rss), 1),
        }
    finally:
        await rlog.close()
        if url and keep is None:
            drop = sa.create_engine(url)
            with drop.begin() as conn:
                for suffix in ("", "_r_counts", "_r_templates", "_r_hist", "_r_tallies", "_r_state", "_r_unmatched"):
                    conn.execute(sa.text(f'DROP TABLE IF EXISTS "{table}{suffix}"'))
            drop.dispose()


def run(
    rows: int = 1_000_000,
    backends: tuple[str, ...] = ("sqlite", "postgresql"),
    repeat: int = 3,
    keep: str | None = None,
) -> dict[str, Any]:
    """The measurement as a function: one result per backend (scripts/bench_scale.py calls this). `keep`
    names a PostgreSQL table that outlives the run: written if empty, else read as it is."""
    with tempfile.TemporaryDirectory(prefix="bench_stats_") as tmp:
        results = []
        for backend in backends:
            work = Path(tmp) / backend
            work.mkdir()
            kept = keep if backend == "postgresql" else None
            results.append(asyncio.run(one_backend(backend, rows, repeat, work, kept)))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)  # each backend as soon as it is done
    return {"bench": "stats_scale", "cpus": os.cpu_count(), "results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="entries written over the last 24 h")
    parser.add_argument("--backends", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--repeat", type=int, default=3, help="timings of each kind (medians reported)")
    parser.add_argument(
        "--keep",
        metavar="TABLE",
        help="PostgreSQL: log into this table and keep it; a later run with the same name only reads it (write on a "
        "busy machine, time on a quiet one; drop it yourself, with its _r_* tables, when done)",
    )
    args = parser.parse_args()
    print(json.dumps(run(args.rows, tuple(args.backends.split(",")), args.repeat, args.keep), indent=2))


if __name__ == "__main__":
    main()
