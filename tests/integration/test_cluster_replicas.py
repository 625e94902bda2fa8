"""Three replicas as separate processes (`run.py --config DIR --port N --no-watch`, each with its own copy of
the config dir) on a Redis of the test's own and the run's PostgreSQL schema:
a clarification started on A is completed on B; a template edit reloaded through A routes on B and C within
2 s with one config hash everywhere; statistics read on C count A's and B's decisions; Redis stopped mid-run
fails no request and makes every replica degraded, and they recover when it is back."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import aiohttp
import pytest
import sqlalchemy as sa

from server.embedding.factory import graph_dir_for
from server.embedding.minilm import MiniLMModel
from server.runtime.loader import load_app_settings
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.pg import PgDatabase
from server.testing.redis_server import PrivateRedis
from server.testing.servers import free_port

pytestmark = pytest.mark.needs_postgres

RUN = Path(__file__).resolve().parents[2] / "run.py"
QUESTION = "what is the boiling point of mercury?"
NAMES = ("A", "B", "C")


def cluster_config(pg_url: str, table: str, redis_url: str, prefix: str) -> str:
    return BASE_CONFIG + (
        f"stats: {{url: '{pg_url}', table: {table}, flush_interval: 0.1}}\n"
        f"sessions: {{backend: redis, url: '{redis_url}', key_prefix: '{prefix}session:'}}\n"
        f"result_cache: {{backend: redis, url: '{redis_url}', key_prefix: '{prefix}results:'}}\n"
        "cluster:\n"
        "  enabled: true\n"
        f"  redis_url: '{redis_url}'\n"
        f"  key_prefix: '{prefix}cluster:'\n"
        "  heartbeat_seconds: 0.5\n"
        "  replica_name: ${IR_REPLICA_NAME}\n"
    )


def start_replica(root: Path, name: str, port: int) -> tuple[subprocess.Popen, Path]:
    log = root / "server.log"  # a file, not a pipe: an undrained pipe would block the server's logging
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(RUN), "--config", str(root / "config"), "--port", str(port), "--no-watch"],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "IR_REPLICA_NAME": name},
        )
    return proc, log


async def wait_ready(session: aiohttp.ClientSession, url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 90
    while True:
        assert proc.poll() is None, log.read_text()[-3000:]
        try:
            async with session.get(url + "/health") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        await asyncio.sleep(0.1)


async def within(seconds: float, check) -> float:
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, "condition not met in time"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_three_replicas_share_sessions_reloads_statistics_and_survive_redis(
    tmp_path, pg_database: PgDatabase, monkeypatch
):
    redis = PrivateRedis(free_port()).start()
    table = f"routing_log_replicas_{uuid.uuid4().hex[:8]}"
    first = tmp_path / "A"
    people_tree(first, cluster_config(pg_database.url, table, redis.url, f"ir-test:{uuid.uuid4().hex}:"))
    # the MiniLM graph is built once here and copied: three replicas building it at once on a loaded
    # 2-core machine took most of the readiness deadline
    monkeypatch.setenv("IR_REPLICA_NAME", "A")  # the config names the replica by it
    settings = load_app_settings(first / "config")
    MiniLMModel(graph_dir_for(settings.embedding, first))
    for name in NAMES[1:]:
        shutil.copytree(first, tmp_path / name)
    procs: list[tuple[subprocess.Popen, Path]] = []
    try:
        ports = [free_port() for _ in NAMES]
        procs = [start_replica(tmp_path / n, n, p) for n, p in zip(NAMES, ports, strict=True)]
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        a, b, c = urls
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as http:

            async def query(url: str, question: str, **extra) -> dict:
                async with http.post(url + "/v1/query", json={"query": question, "adapter": "people", **extra}) as r:
                    assert r.status == 200, await r.text()
                    return await r.json()

            async def health(url: str) -> dict:
                async with http.get(url + "/health") as r:
                    return await r.json()

            for url, (proc, log) in zip(urls, procs, strict=True):
                await wait_ready(http, url, proc, log)

            # a clarification started on A is completed on B (sessions in Redis)
            asked = await query(a, "list the people in a department")
            assert asked["metadata"]["status"] == "needs_clarification", asked
            done = await query(b, "Sales", session_id=asked["session_id"])
            assert done["metadata"]["status"] == "executed" and done["rows"] == [{"name": "Linus"}], done
            assert done["metadata"]["session"]["completes_turn"] == 1

            # a template edit reloaded through A is routable on B and C within 2 s; one hash everywhere
            before = {(await health(u))["config_hash"] for u in urls}
            assert len(before) == 1
            for name in NAMES:
                library = tmp_path / name / "templates" / "people" / "people.yaml"
                text = library.read_text()
                library.write_text(
                    text.replace('"headcount per department"', f'"headcount per department", "{QUESTION}"')
                )
            assert (await query(c, QUESTION))["metadata"].get("template_id") is None  # C has not reloaded yet
            async with http.post(a + "/admin/reload") as r:
                assert r.status == 200
            reloaded = time.monotonic()

            async def routable_on_b_and_c() -> bool:
                answers = [await query(u, QUESTION) for u in (b, c)]
                return all(x["metadata"].get("template_id") == "headcount_by_department" for x in answers)

            await within(2 - (time.monotonic() - reloaded), routable_on_b_and_c)
            after = {(await health(u))["config_hash"] for u in urls}
            assert len(after) == 1 and after != before

            # statistics read on C count the decisions A and B made (one PostgreSQL log, per replica)
            per: dict[str, int] = {}

            async def counted() -> bool:
                async with http.get(c + "/v1/routing/statistics", params={"adapter": "people"}) as r:
                    body = await r.json()
                per.clear()
                per.update({e["replica"]: e["count"] for e in body["routing_log"]["by_replica"]})
                return (
                    per.get("A", 0) >= 1 and per.get("B", 0) >= 2 and body["routing_log"]["total"] == sum(per.values())
                )

            await within(5, counted)

            async with http.get(c + "/v1/cluster") as r:
                listing = await r.json()
            assert sorted(x["name"] for x in listing["replicas"]) == list(NAMES) and listing["consistent"] is True

            # Redis stops: no request fails, every replica says degraded; Redis returns: they recover
            redis.stop()
            failures = 0
            for _ in range(6):
                for url in urls:
                    first_turn = await query(url, "list the people in a department")
                    follow = await query(url, "HR", session_id=first_turn["session_id"])
                    failures += follow["metadata"]["status"] != "executed"
                    failures += (await query(url, "headcount per department"))["metadata"]["status"] != "executed"
            assert failures == 0  # conversations go on in each replica's own memory

            async def all_degraded() -> bool:
                return all([(await health(u))["status"] == "degraded" for u in urls])

            await within(5, all_degraded)
            degraded = await health(b)
            assert degraded["shared"]["sessions"]["status"] == "down"
            assert degraded["cluster"]["bus"] == "down"

            redis.start()

            async def all_ok() -> bool:
                for u in urls:
                    await query(u, "headcount per department")  # the caches notice on use
                    await query(u, "list the people in a department")
                return all([(await health(u))["status"] == "ok" for u in urls])

            await within(10, all_ok)
            assert (await query(a, "headcount per department"))["metadata"]["status"] == "executed"
    finally:
        for proc, _ in procs:
            proc.send_signal(signal.SIGTERM)
        for proc, _ in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        redis.stop()
        engine = sa.create_engine(pg_database.url)
        with engine.begin() as conn:
            for name in (table, f"{table}_replicas", f"{table}_cluster"):
                conn.execute(sa.text(f'DROP TABLE IF EXISTS "{name}"'))
        engine.dispose()
