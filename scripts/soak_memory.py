#!/usr/bin/env python3
"""Memory soak: the server's RSS over time under traffic that fills every in-memory cache (issue 31).

Starts the demo server (`python run.py serve`, one process, on a free loopback port) on a throwaway copy
of the demo tree whose `orders_between_dates` template caches its answers (`cache_ttl_seconds`), with the
bounds given on the command line, and drives for `--seconds` (or until `--questions` unique questions):
- unique questions to /v1/test_routing (each embedded once: the embedding cache's memory LRU fills);
- large distinct answers: /v1/query for orders between two dates never asked before (up to 1,000 rows
  each, cached: the result cache fills);
- sessions: every /v1/query opens one (no session_id), and a clarification leaves a pending state;
- MCP sessions: an `initialize` on /mcp opens one (stateful transport).
Every `--sample-seconds` the server's RSS (VmRSS) is read from /proc, and the caches' own accounted
bytes from /metrics (`result_cache_mb`, `embedding_cache_mb`). Prints one JSON object: the
samples, the RSS once started (`started_rss_mb`) and after `--warmup-seconds` of the same traffic
(`start_rss_mb`: lanes and pools loaded, before the counted load), the plateau (the last quarter of
the samples: range and growth per 1,000 questions) and the configured bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.testing.demo import seed_demo_tree  # noqa: E402
from server.testing.mcp_wire import ACCEPT, INIT  # noqa: E402

SUBJECTS = ("orders", "customers", "employees", "revenue", "products", "departments", "salaries", "invoices")
ASKS = ("how many", "list the", "show me the", "what are the", "which", "total of the", "average of the")
WHEN = ("last week", "this year", "in march", "per region", "by channel", "for the north team", "since 2024")


def unique_question(n: int, tag: str) -> str:
    """A question never asked before, phrased like a user's (the number makes it unique)."""
    rng = random.Random(n)
    return f"{rng.choice(ASKS)} {rng.choice(SUBJECTS)} {rng.choice(WHEN)} number {n} {tag}"


def dates_question(n: int) -> str:
    """Orders between two dates no earlier question named: a distinct answer of up to 1,000 rows."""
    start = 20230101 + (n % 28) + 100 * ((n // 28) % 6)  # Jan-Jun 2023, any day to the 28th
    end_day = 1 + (n // 168) % 28
    end_month = 7 + (n // 4704) % 6
    first = f"{str(start)[:4]}-{str(start)[4:6]}-{str(start)[6:]}"
    return f"show 1000 orders placed between {first} and 2025-{end_month:02d}-{end_day:02d}"


@dataclass
class Counts:
    questions: int = 0  # unique, embedded
    answers: int = 0  # /v1/query with a large distinct answer
    sessions: int = 0  # /v1/query calls (each opens a session)
    mcp_sessions: int = 0  # MCP initialize calls that opened one
    answer_rows: int = 0  # rows of the large answers, together
    errors: dict[str, int] = field(default_factory=dict)
    start_rss_mb: float = 0.0  # after the warm-up

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


def soak_tree(root: Path, embedding_bytes: int | None, result_bytes: int | None) -> tuple[Path, dict[str, Any]]:
    """The demo tree with cached date answers and the given bounds; returns (config dir, the bounds)."""
    config = seed_demo_tree(root)
    orders = root / "templates" / "sales" / "orders.yaml"
    text = orders.read_text(encoding="utf-8")
    marker = "  - id: orders_between_dates\n"
    assert marker in text
    orders.write_text(text.replace(marker, marker + "    cache_ttl_seconds: 3600\n"), encoding="utf-8")
    path = config / "config.yaml"
    settings = yaml.safe_load(path.read_text(encoding="utf-8"))
    if embedding_bytes is not None:
        settings["embedding"]["cache"]["memory_max_bytes"] = embedding_bytes
    if result_bytes is not None:
        settings["result_cache"] = {"max_bytes": result_bytes}
    settings["mcp"] = {"transport": "stateful"}
    path.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    return config, bounds_of(config)


def bounds_of(config: Path) -> dict[str, Any]:
    """The memory bounds the server reads from this config (its defaults where unset)."""
    from server.runtime.loader import load_app_settings

    app = load_app_settings(config)
    return {
        "embedding_memory_max_bytes": app.embedding.cache.memory_max_bytes,
        "result_cache_max_bytes": app.result_cache.max_bytes,
        "result_cache_max_entry_bytes": int(app.result_cache.max_bytes * app.result_cache.max_entry_share),
        "sessions_max": app.sessions.max_sessions,
        "session_max_state_bytes": app.sessions.max_state_bytes,
        "mcp_max_sessions": app.mcp.max_sessions,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(config: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`run.py serve` on a free port, its output to `log` (a pipe nobody reads would fill and stall it)."""
    port = free_port()
    command = [sys.executable, str(ROOT / "run.py"), "--config", str(config), "serve", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as reply:
                if reply.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("server did not answer /health within 300 s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


async def drive(url: str, seconds: float, limit: int | None, clients: int, counts: Counts, tag: str) -> None:
    """`clients` closed-loop clients; each round sends unique questions, and every 8th a large answer,
    every 16th a pending session and every 32nd an MCP initialize."""
    import aiohttp

    deadline = time.monotonic() + seconds
    step = 0

    async def one(http: aiohttp.ClientSession, n: int) -> None:
        kind, payload, path = "question", {"query": unique_question(n, tag)}, "/v1/test_routing"
        headers: dict[str, str] = {}
        if n % 8 == 0:
            kind, path, payload = "answer", "/v1/query", {"query": dates_question(n // 8), "adapter": "sales"}
        elif n % 16 == 1:
            kind, path, payload = "session", "/v1/query", {"query": f"orders between {n % 28 + 1} march and"}
        elif n % 32 == 3:
            kind, path, payload, headers = "mcp", "/mcp", INIT, ACCEPT
        async with http.post(url + path, json=payload, headers=headers) as reply:
            body = await reply.read()
            if reply.status != 200:
                counts.error(f"{kind} {reply.status}")
                return
        if kind == "question":
            counts.questions += 1
        elif kind == "answer":
            rows = json.loads(body).get("rows") or []
            if not rows:
                counts.error("answer without rows")
                return
            counts.answers += 1
            counts.answer_rows += len(rows)
            counts.sessions += 1
        elif kind == "session":
            counts.sessions += 1
        else:
            counts.mcp_sessions += 1

    async def client(http: aiohttp.ClientSession) -> None:
        nonlocal step
        while time.monotonic() < deadline and (limit is None or counts.questions < limit):
            step += 1
            try:
                await one(http, step)
            except (TimeoutError, aiohttp.ClientError) as exc:
                counts.error(type(exc).__name__)

    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        await asyncio.gather(*(client(http) for _ in range(clients)))


async def cache_mb(url: str) -> dict[str, float]:
    """The caches' own accounted bytes from /metrics (`intent_router_cache_bytes`), in MB by cache."""
    import aiohttp
    from prometheus_client.parser import text_string_to_metric_families

    async with aiohttp.ClientSession() as http, http.get(url + "/metrics") as reply:
        text = await reply.text()
    return {
        f"{s.labels['cache'].split(':')[0]}_cache_mb": round(s.value / 2**20, 2)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "intent_router_cache_bytes"
    }


async def sample(url: str, pid: int, every: float, counts: Counts, started: float, out: list[dict[str, Any]]) -> None:
    while True:
        out.append(
            {
                "t": round(time.monotonic() - started, 1),
                "rss_mb": rss_mb(pid),
                **counts_of(counts),
                **await cache_mb(url),
            }
        )
        await asyncio.sleep(every)


async def soak(url: str, pid: int, args: argparse.Namespace, counts: Counts) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = []
    await drive(url, args.warmup_seconds, None, args.clients, Counts(), "warm-up")  # lanes, pools, first calls
    counts.start_rss_mb = rss_mb(pid)
    started = time.monotonic()
    sampler = asyncio.create_task(sample(url, pid, args.sample_seconds, counts, started, samples))
    try:
        await drive(url, args.seconds, args.questions, args.clients, counts, secrets.token_hex(3))
    finally:
        sampler.cancel()
    samples.append(
        {"t": round(time.monotonic() - started, 1), "rss_mb": rss_mb(pid), **counts_of(counts), **await cache_mb(url)}
    )
    return samples


def counts_of(counts: Counts) -> dict[str, int]:
    return {
        "questions": counts.questions,
        "answers": counts.answers,
        "sessions": counts.sessions,
        "mcp_sessions": counts.mcp_sessions,
        "answer_rows": counts.answer_rows,
    }


def plateau(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The last quarter of the run: its RSS range and how much it grew per 1,000 unique questions."""
    tail = samples[len(samples) * 3 // 4 :] if len(samples) >= 4 else samples
    first, last = tail[0], tail[-1]
    asked = last["questions"] - first["questions"]
    grew = last["rss_mb"] - first["rss_mb"]
    return {
        "from_t": first["t"],
        "rss_min_mb": min(s["rss_mb"] for s in tail),
        "rss_max_mb": max(s["rss_mb"] for s in tail),
        "grew_mb": round(grew, 1),
        "mb_per_1000_questions": round(grew * 1000 / asked, 3) if asked else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=240.0, help="how long to drive the server (default 240)")
    parser.add_argument("--questions", type=int, help="stop after this many unique questions (default: no limit)")
    parser.add_argument("--warmup-seconds", type=float, default=15.0, help="traffic before `start` (default 15)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument("--sample-seconds", type=float, default=5.0, help="RSS sampling interval (default 5)")
    parser.add_argument("--embedding-bytes", type=int, help="embedding.cache.memory_max_bytes (default: its default)")
    parser.add_argument("--result-bytes", type=int, help="result_cache.max_bytes (default: its default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config, bounds = soak_tree(Path(tmp) / "tree", args.embedding_bytes, args.result_bytes)
        proc, url = start_server(config, Path(tmp) / "server.log")
        try:
            started = rss_mb(proc.pid)
            counts = Counts()
            samples = asyncio.run(soak(url, proc.pid, args, counts))
            end = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(30)
    result = {
        "benchmark": "soak_memory",
        "seconds": args.seconds,
        "clients": args.clients,
        "counts": counts_of(counts),
        "errors": counts.errors,
        "bounds": bounds,
        "started_rss_mb": started,
        "start_rss_mb": counts.start_rss_mb,
        "end_rss_mb": end,
        "plateau": plateau(samples),
        "samples": samples,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
