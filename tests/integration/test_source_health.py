"""Per-source health (issue 14 item 5): each child's search timeouts and failures reach the routing log
and the statistics' `sources` section; each source's query failures, execute latency and live circuit
state are shown by /v1/routing/statistics."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from server.service import answer as answering
from server.stats import RoutingLog, StatsSettings
from server.stats.aggregates import Window, compute
from server.stats.capture import record_for
from server.stats.record import from_error
from server.testing.app import running_app
from server.testing.composite_tree import make_composite, probe_runtime
from server.testing.configs import BASE_CONFIG, make_tree
from server.testing.flaky_api import FlakyApi
from server.web.routing_log import STATS_LOG

PEOPLE_Q = "who works in the Engineering department?"


@pytest.fixture
async def api() -> AsyncIterator[FlakyApi]:
    async with FlakyApi() as server:
        yield server


def by_adapter(sources: list[dict]) -> dict[str, dict]:
    return {s["adapter"]: s for s in sources}


async def test_search_timeouts_failures_and_source_errors_are_counted_per_source(tmp_path):
    runtime = await probe_runtime(tmp_path)
    rlog = RoutingLog(StatsSettings(flush_interval=0.05), tmp_path)
    await rlog.start()
    try:
        composite = make_composite(runtime, ["slow", "broken", "hr"], search_timeout=0.2)
        for _ in range(2):
            answer = await answering.answer(composite, PEOPLE_Q)
            assert answer.status.value == "executed"
            rlog.record(record_for("query", composite, PEOPLE_Q, answer, 12.0))
        rlog.record(from_error("query", "composite", PEOPLE_Q, "source_unavailable", 503, "hr", 3.0))
        await rlog.flush()
        with rlog.engine.connect() as conn:  # the decision's failures are in the row, as JSON
            stored = conn.execute(sa.select(rlog.table.c.search_failures).where(rlog.table.c.outcome == "executed"))
            assert [json.loads(doc) for doc in stored.scalars()] == [
                [{"adapter": "slow", "kind": "timeout"}, {"adapter": "broken", "kind": "search"}]
            ] * 2
        figures = compute(rlog.engine, rlog.table, Window(time.time() - 60, time.time()))
    finally:
        await rlog.close()
        await runtime.close()
    sources = by_adapter(figures["sources"])
    assert set(sources) == {"slow", "broken", "hr"}
    assert (sources["slow"]["search_timeouts"], sources["slow"]["search_failures"]) == (2, 0)
    assert (sources["broken"]["search_timeouts"], sources["broken"]["search_failures"]) == (0, 2)
    hr = sources["hr"]
    assert (hr["queries"], hr["executed"], hr["failed"]) == (3, 2, 1)
    assert hr["failures"] == {"source_unavailable": 1}
    assert hr["execute_ms"]["count"] == 2 and hr["execute_ms"]["p95"] >= hr["execute_ms"]["p50"] > 0
    assert sources["slow"]["queries"] == 0 and sources["slow"]["execute_ms"]["count"] == 0


async def test_statistics_show_each_sources_circuit_and_query_failures(tmp_path, api):
    adapters = f"""
adapters:
  - name: flaky
    type: http
    connection: {{url: "{api.base_url}"}}
    templates: ["templates/flaky/*.yaml"]
    confidence_threshold: 0.1
    retries: {{max_attempts: 1}}
    circuit_breaker: {{failure_threshold: 2, reset_timeout: 30}}
"""
    library = """
templates:
  - id: items
    description: List all the items in the catalogue
    nl_examples: ["show me all items", "list the items"]
    http: {path: /items, response: {items_path: items}}
"""
    config = BASE_CONFIG + "stats: {flush_interval: 0.05}\nresult_cache: {enabled: false}\n"
    config_dir = make_tree(tmp_path, config, {"flaky.yaml": adapters}, {"flaky/items.yaml": library})
    async with running_app(config_dir) as (client, _holder):
        ask = {"query": "list the items", "adapter": "flaky"}
        assert (await client.post("/v1/query", json=ask)).status == 200
        resp = await client.get("/v1/routing/statistics?adapter=flaky")
        live = (await resp.json())["sources"]
        assert [(s["adapter"], s["circuit"]["state"], s["calls"], s["failures"]) for s in live] == [
            ("flaky", "closed", 1, 0)
        ]
        api.down = True
        for _ in range(3):  # two failures open the circuit; the third is answered 503 at once
            assert (await client.post("/v1/query", json=ask)).status == 503
        await client.app[STATS_LOG].flush()
        body = await (await client.get("/v1/routing/statistics")).json()
    flaky = by_adapter(body["sources"])["flaky"]
    assert flaky["type"] == "http"
    assert flaky["circuit"]["state"] == "open" and flaky["circuit"]["consecutive_failures"] == 2
    assert flaky["circuit"]["retry_in_seconds"] > 25
    assert (flaky["calls"], flaky["failures"], flaky["rejected"]) == (4, 2, 1)
    assert flaky["bulkhead"]["running"] == 0
    logged = by_adapter(body["routing_log"]["sources"])["flaky"]
    assert (logged["queries"], logged["executed"], logged["failed"]) == (4, 1, 3)
    assert logged["failures"] == {"source_unavailable": 3}
    assert logged["execute_ms"]["count"] == 1
