#!/usr/bin/env python3
"""Replicas: q/s of 1 vs 2 demo replicas behind a round-robin client, and what Redis-backed shared state adds.

Part 1 starts two replicas of the demo as separate processes (`run.py --config DIR --port N --no-watch`,
each on its own copy of the tree) with `cluster` on, sessions and the result cache in Redis (127.0.0.1:6379,
a key prefix of this run's own) and the routing log on PostgreSQL (a schema of this run's own; per-replica
SQLite when no PostgreSQL answers). Closed-loop clients send unique questions (bench_throughput's BANKING77
pool) over keep-alive connections; a round-robin client sends each request to the next replica in turn.
"1 replica" sends everything to replica A while B idles, "2 replicas" alternates A and B; the two alternate
in rounds (order flipped every round), each round followed by the bare encoder on batches of 16 in this
process, so all three see the same machine. Reported: medians over the rounds and `ratio_2_over_1`.

Part 2 (replicas stopped) builds two demo runtimes in this process, one with sessions and the result cache
in memory, one with both in Redis, and interleaves them: a result-cache hit on `hr` (the execute stage, which
holds the cache read, and the whole answer), a clarification round trip on `company` (question, then the bare
value with the session id: one session save, then a load and a save), and the stores' own operations (result
cache get of a 49-row answer, session load and save).
After each pass the bare encoder embeds one new question (the baseline). Reported: p50 per backend, `added_ms`
(Redis minus memory) and `added_over_bare_single` (that over the bare encoder's p50 for one question).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_result_cache import QUESTIONS as CACHED_QUESTIONS  # noqa: E402
from bench_throughput import Bare, Connection, pct, questions  # noqa: E402

from server.adapters.result_cache import CachedRows  # noqa: E402
from server.conversations.state import SessionState  # noqa: E402
from server.runtime.build import Runtime, build_runtime  # noqa: E402
from server.runtime.loader import load_config  # noqa: E402
from server.service.answer import answer, answer_in_session  # noqa: E402
from server.testing.demo import seed_demo_tree  # noqa: E402
from server.testing.pg import reachable_url, seeded_schema  # noqa: E402
from server.testing.redis_server import ensure_redis  # noqa: E402
from server.testing.servers import free_port  # noqa: E402

T = TypeVar("T")
RUN = ROOT / "run.py"
CLARIFY = "how many employees earn more than?"  # company: asks for min_salary
VALUE = "250000"  # completes it: 3 employees, so the round trip is mostly routing and the session
PATHS = ("/v1/test_routing", "/v1/query")


# --------------------------------------------------------------------------- config trees


def shared_state(config_dir: Path, redis_url: str | None, prefix: str, extra: dict) -> Path:
    """Rewrite the demo's config.yaml: sessions and result cache in Redis under `prefix` (memory when
    `redis_url` is None), plus the `extra` top-level blocks (stats, cluster)."""
    path = config_dir / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    cache: dict = {"default_ttl_seconds": 3600}  # hits stay hits for the whole run
    if redis_url is None:
        data["sessions"] = {"backend": "memory"}
        data["result_cache"] = cache | {"backend": "memory"}
    else:
        data["sessions"] = {"backend": "redis", "url": redis_url, "key_prefix": f"{prefix}session:"}
        data["result_cache"] = cache | {"backend": "redis", "url": redis_url, "key_prefix": f"{prefix}results:"}
    data.update(extra)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return config_dir


def replica_blocks(redis_url: str, prefix: str, pg_url: str | None) -> dict:
    stats: dict = {"enabled": True, "store_queries": True}
    if pg_url is not None:
        stats |= {"url": pg_url, "table": "routing_log_bench"}
    else:
        stats |= {"path": "data/routing_log.sqlite3"}
    cluster = {
        "enabled": True,
        "redis_url": redis_url,
        "key_prefix": f"{prefix}cluster:",
        "replica_name": "${IR_REPLICA_NAME}",
    }
    return {"stats": stats, "cluster": cluster}


# --------------------------------------------------------------------------- replicas


class Replica:
    """One server process on its own tree and port; stderr to a file (an undrained pipe would block it)."""

    def __init__(self, root: Path, name: str) -> None:
        self.root, self.name, self.port = root, name, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / "server.log"
        command = [sys.executable, str(RUN), "--config", str(root / "config"), "--port", str(self.port), "--no-watch"]
        with self.log.open("w") as err:
            self.proc = subprocess.Popen(
                command, cwd=root, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "IR_REPLICA_NAME": name}
            )

    def wait_ready(self, seconds: float = 180) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"replica {self.name} exited:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"replica {self.name} did not answer /health within {seconds:g} s")

    def health(self) -> dict:
        with urllib.request.urlopen(self.url + "/health", timeout=5) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def outcome(body: dict) -> str:
    """What an answer was: /v1/query's metadata.status, test_routing's would-execute or not."""
    if "metadata" in body:
        return str(body["metadata"].get("status"))
    return "would_execute" if body["routing_decision"]["would_execute"] else "would_not_execute"


async def round_robin(urls: list[str], path: str, batch: list[str], clients: int) -> dict:
    """Closed loop: `clients` clients, each with a keep-alive connection to every replica; each request
    goes to the next replica in turn (one counter for all clients, as a round-robin balancer does)."""
    queue = list(reversed(batch))
    turn = itertools.count()
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    served: Counter[str] = Counter()
    errors = 0

    async def client() -> None:
        nonlocal errors
        conns = [Connection(urlsplit(u).hostname or "127.0.0.1", urlsplit(u).port or 80) for u in urls]
        try:
            while queue:
                question = queue.pop()
                which = next(turn) % len(urls)
                t = time.perf_counter()
                status, body = await conns[which].post(path, {"query": question})
                latencies.append((time.perf_counter() - t) * 1000)
                served[urls[which]] += 1
                if status != 200:
                    errors += 1
                    continue
                statuses[outcome(body)] += 1
        finally:
            for conn in conns:
                await conn.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - started
    return {
        "questions": len(batch),
        "errors": errors,
        "qps": round(len(batch) / wall, 1),
        "latency_p50_ms": pct(latencies, 0.5),
        "latency_p99_ms": pct(latencies, 0.99),
        "served_per_replica": sorted(served.values()),
        "answers": dict(statuses),
    }


@contextmanager
def routing_log_database() -> Iterator[str | None]:
    """A PostgreSQL schema of this run's own for the shared routing log (None: no PostgreSQL answers)."""
    url = reachable_url()
    if url is None:
        yield None
        return
    with seeded_schema(url, prefix="ir_bench") as db:
        yield db.url


def throughput(tmp: Path, redis_url: str, prefix: str, args: argparse.Namespace) -> dict:
    from server.embedding.factory import graph_dir_for
    from server.runtime.loader import load_app_settings

    with ExitStack() as stack:
        pg_url = stack.enter_context(routing_log_database())
        first = tmp / "A"
        config = seed_demo_tree(first)
        bare = Bare(graph_dir_for(load_app_settings(config).embedding, first))  # builds the graph B copies
        shared_state(config, redis_url, prefix, replica_blocks(redis_url, prefix, pg_url))
        shutil.copytree(first, tmp / "B")
        replicas = [Replica(tmp / name, name) for name in ("A", "B")]
        for replica in replicas:
            stack.callback(replica.stop)
        for replica in replicas:
            replica.wait_ready()
        a, b = (r.url for r in replicas)
        setups = {"1": [a], "2": [a, b]}
        pool = iter(questions(args.questions * args.rounds * (2 * len(PATHS) + 1) + 200, uuid.uuid4().hex[:6]))
        take = lambda n: [next(pool) for _ in range(n)]  # noqa: E731
        for path in PATHS:  # warm-up: connections, first-call costs, on both replicas
            asyncio.run(round_robin([a, b], path, take(40), 4))
        runs: dict[str, dict[str, list[dict]]] = {path: {"1": [], "2": []} for path in PATHS}
        bare_rates: list[float] = []
        load_before = os.getloadavg()
        for number in range(args.rounds):
            order = ["1", "2"] if number % 2 == 0 else ["2", "1"]
            for path in PATHS:
                for setup in order:
                    result = asyncio.run(round_robin(setups[setup], path, take(args.questions), args.clients))
                    runs[path][setup].append(result)
            texts = take(args.questions)
            bare_rates.append(len(texts) / bare.batched_seconds(texts))
        load_after = os.getloadavg()
        health = {r.name: r.health() for r in replicas}

    def summary(rounds: list[dict]) -> dict:
        return {
            "qps_median": round(statistics.median(r["qps"] for r in rounds), 1),
            "qps_rounds": [r["qps"] for r in rounds],
            "latency_p50_ms_median": round(statistics.median(r["latency_p50_ms"] for r in rounds), 1),
            "errors": sum(r["errors"] for r in rounds),
            "served_per_replica": [sum(x) for x in zip(*(r["served_per_replica"] for r in rounds), strict=True)],
            "answers": dict(sum((Counter(r["answers"]) for r in rounds), Counter())),
        }

    bare_median = statistics.median(bare_rates)
    per_path = {}
    for path, by_setup in runs.items():
        one, two = summary(by_setup["1"]), summary(by_setup["2"])
        per_path[path] = {
            "one_replica": one,
            "two_replicas": two,
            "ratio_2_over_1": round(two["qps_median"] / one["qps_median"], 2),
            "ratio_2_over_1_per_round": [
                round(t["qps"] / o["qps"], 2) for o, t in zip(by_setup["1"], by_setup["2"], strict=True)
            ],
            "one_replica_over_bare": round(one["qps_median"] / bare_median, 2),
            "two_replicas_over_bare": round(two["qps_median"] / bare_median, 2),
        }
    return {
        "routing_log": "postgresql (shared)" if pg_url else "sqlite (per replica)",
        "clients": args.clients,
        "questions_per_round": args.questions,
        "rounds": args.rounds,
        "paths": per_path,
        "bare_encoder_batch16_sentences_per_s": round(bare_median, 1),
        "bare_encoder_rounds": [round(x, 1) for x in bare_rates],
        "replica_health": {name: h["status"] for name, h in health.items()},
        "load_average_1m": [round(load_before[0], 2), round(load_after[0], 2)],
    }


# --------------------------------------------------------------------------- shared state latency


async def timed(samples: list[float], call: Callable[[], Awaitable[T]]) -> T:
    started = time.perf_counter()
    result = await call()
    samples.append((time.perf_counter() - started) * 1000)
    return result


async def one_pass(runtime: Runtime, samples: dict[str, list[float]], number: int) -> None:
    """One sample of each measurement on this runtime (sessions and result cache in memory or in Redis)."""
    question = CACHED_QUESTIONS[number % len(CACHED_QUESTIONS)]
    hit = await timed(samples["cache_hit_answer"], lambda: answer(runtime.get("hr"), question))
    meta = hit.response.metadata
    if meta.status != "executed" or not meta.from_cache:
        raise SystemExit(f"expected a cache hit for {question!r}: {meta.status}, from_cache={meta.from_cache}")
    samples["cache_hit_execute_stage"].append((meta.timings_ms or {})["execute"])

    company, sessions = runtime.get("company"), runtime.sessions
    started = time.perf_counter()
    asked = await timed(samples["clarification_question"], lambda: answer_in_session(company, CLARIFY, sessions, None))
    sid = asked.body["session_id"]
    done = await timed(samples["clarification_value"], lambda: answer_in_session(company, VALUE, sessions, sid))
    samples["clarification_round_trip"].append((time.perf_counter() - started) * 1000)
    samples["clarification_value_execute_stage"].append((done.response.metadata.timings_ms or {})["execute"])
    if asked.status != "needs_clarification" or done.body["metadata"]["session"].get("completes_turn") != 1:
        raise SystemExit(f"clarification round trip did not complete: {asked.status}, {done.body['metadata']}")

    assert runtime.result_cache is not None
    cache = runtime.result_cache
    state = SessionState(id=f"bench-{number}", adapter="company", turn=1)
    for _ in range(10):  # the stores alone: cheap, so more samples
        got = await timed(samples["result_cache_get"], lambda: cache.get("hr:bench-rows"))
        if got is None:
            raise SystemExit("the result cache lost the benchmark's entry")
        await timed(samples["session_save"], lambda: sessions.save(state))
        await timed(samples["session_load"], lambda: sessions.load(state.key))


async def shared_latency(tmp: Path, redis_url: str, prefix: str, passes: int) -> dict:
    from server.embedding.factory import graph_dir_for

    memory_config = shared_state(seed_demo_tree(tmp / "memory"), None, prefix, {})
    runtimes = {
        "memory": await build_runtime(load_config(memory_config)),
        "redis": await build_runtime(load_config(shared_state(seed_demo_tree(tmp / "redis"), redis_url, prefix, {}))),
    }
    bare = Bare(graph_dir_for(runtimes["memory"].config.app.embedding, tmp / "memory"))
    texts = questions(passes, uuid.uuid4().hex[:6])
    samples: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in runtimes}
    bare_ms: list[float] = []
    try:
        warm = await answer(runtimes["memory"].get("hr"), CACHED_QUESTIONS[1])  # a list of employees
        rows = CachedRows(warm.response.rows, list(warm.response.metadata.columns or []), False)
        for runtime in runtimes.values():  # warm-up: model, pools, connections; fills both result caches
            assert runtime.result_cache is not None
            await runtime.result_cache.put("hr:bench-rows", rows, 3600)
            for question in CACHED_QUESTIONS:
                await answer(runtime.get("hr"), question)
            asked = await answer_in_session(runtime.get("company"), CLARIFY, runtime.sessions, None)
            await answer_in_session(runtime.get("company"), VALUE, runtime.sessions, asked.body["session_id"])
        load_before = os.getloadavg()
        for number in range(passes):
            order = ["memory", "redis"] if number % 2 == 0 else ["redis", "memory"]
            for name in order:
                await one_pass(runtimes[name], samples[name], number)
            bare_ms.append(bare.single_ms(texts[number]))  # the baseline: embedding one new question
        load_after = os.getloadavg()
    finally:
        for runtime in runtimes.values():
            await runtime.close()
    bare_p50 = statistics.median(bare_ms)
    measures = {}
    for key in samples["memory"]:
        memory, redis = (statistics.median(samples[n][key]) for n in ("memory", "redis"))
        measures[key] = {
            "memory_p50_ms": round(memory, 3),
            "redis_p50_ms": round(redis, 3),
            "added_ms": round(redis - memory, 3),
            "added_over_bare_single": round((redis - memory) / bare_p50, 3),
        }
    return {
        "passes": passes,
        "result_rows": len(rows.rows),
        "bare_encoder_single_p50_ms": round(bare_p50, 3),
        "p50": measures,
        "load_average_1m": [round(load_before[0], 2), round(load_after[0], 2)],
    }


def forget_keys(redis_url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--questions", type=int, default=300, help="questions per round and setup")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--passes", type=int, default=300, help="interleaved passes of the shared-state part")
    args = parser.parse_args()

    redis_url = ensure_redis()
    prefix = f"intent-router-bench:{uuid.uuid4().hex}:"
    at_start = uptime()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            replicas = throughput(Path(tmp) / "replicas", redis_url, prefix, args)
            shared = asyncio.run(shared_latency(Path(tmp) / "runtimes", redis_url, prefix, args.passes))
    finally:
        forget_keys(redis_url, prefix)
    result = {
        "benchmark": "replicas_round_robin_and_shared_state",
        "cpu_count": os.cpu_count(),
        "uptime_at_start": at_start,
        "uptime_at_end": uptime(),
        "replicas": replicas,
        "shared_state": shared,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
