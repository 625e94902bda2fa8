"""Optional background starts (the routing log's database, the MCP SDK) wait until the server has
answered, so their imports do not take the GIL from the start (issue 17's warm start); they still begin
on their own after a second, and at once when something needs them. Nothing here waits by sleeping: the
gate's timer runs on a hand-moved clock, and an app test that must not see the fallback disarms it."""

from __future__ import annotations

import asyncio
import time

from server.mcp.http import MCP
from server.start_gate import FALLBACK_SECONDS, START_GATE, StartGate
from server.testing.app import running_app
from server.testing.clock import ManualClock
from server.testing.configs import people_tree
from server.testing.polling import eventually
from server.web.metrics import METRICS
from server.web.routing_log import STATS_LOG


async def test_the_gate_opens_at_the_latest_after_its_fallback():
    clock = ManualClock()
    gate = StartGate(clock.call_later)
    gate.open_later(FALLBACK_SECONDS)
    clock.advance(FALLBACK_SECONDS * 0.99)
    assert not gate.is_open
    clock.advance(FALLBACK_SECONDS * 0.01)
    assert gate.is_open
    await asyncio.wait_for(gate.wait(), 2)  # returns at once from then on
    gate.open()  # idempotent
    assert gate.is_open


async def test_a_disarmed_gate_leaves_no_timer_behind():
    clock = ManualClock()
    gate = StartGate(clock.call_later)
    gate.open_later(FALLBACK_SECONDS)
    gate.disarm()
    assert clock.armed == []
    clock.advance(FALLBACK_SECONDS * 10)
    assert not gate.is_open


HELD_BACK = 3  # the routing log's opening, the MCP SDK's load and the encoder lanes wait at the gate


async def test_the_first_answer_says_starting_and_opens_the_gate(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        app = client.server.app
        gate = app[START_GATE]
        gate.disarm()  # no fallback in this test: only the first answer may open the gate
        await eventually(lambda: gate.waiting == HELD_BACK)  # started, nothing answered yet: they wait
        assert not gate.is_open
        assert app[MCP]._sdk is None and app[STATS_LOG]._engine is None  # not loaded meanwhile
        first = await (await client.get("/health")).json()
        # the answer was computed before it went out: both were still held back
        assert first["mcp"]["status"] == "starting"
        assert first["routing_log"]["status"] == "starting"
        assert gate.is_open
        await eventually(lambda: app[MCP].health()["status"] == "ok")
        await eventually(lambda: app[STATS_LOG].health()["status"] == "ok")
        # and what was held back works: the log writes what is answered
        question = {"query": "who works in the Engineering department?", "adapter": "people"}
        asked = await client.post("/v1/query", json=question)
        assert asked.status == 200
        await app[STATS_LOG].flush()
        assert app[STATS_LOG].counters.written >= 1


async def test_with_nobody_asking_they_start_after_the_fallback(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        app = client.server.app
        started = time.perf_counter()  # the fallback was armed just before: at the end of the app's startup
        await eventually(lambda: app[START_GATE].waiting == HELD_BACK or app[START_GATE].is_open)
        if not app[START_GATE].is_open:  # (a machine that stalled for the whole fallback skips this look)
            assert app[MCP].health()["status"] == "starting"  # held back although nothing was asked
            assert app[MCP]._sdk is None and app[STATS_LOG]._engine is None
        await eventually(lambda: app[MCP].health()["status"] == "ok")
        assert time.perf_counter() - started > FALLBACK_SECONDS * 0.8  # not before the fallback
        await eventually(lambda: app[STATS_LOG].health()["status"] == "ok")


async def test_an_assistant_calling_mcp_first_does_not_wait_for_the_fallback(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        app = client.server.app
        app[START_GATE].disarm()  # no fallback: only the request can open the gate
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        asking = asyncio.ensure_future(client.post("/mcp", json=hello, headers={"Accept": "application/json"}))
        # the request opens the gate itself (no response could have opened it: MCP answers once loaded)
        await eventually(lambda: app[START_GATE].is_open)
        reply = await asking
        assert reply.status < 500


async def test_a_scrape_before_the_log_opened_does_not_open_it(tmp_path):
    """Prometheus may scrape first: the routing log's figures come without its engine (its answer then
    opens the gate, and the log opens in the background as usual)."""
    async with running_app(people_tree(tmp_path)) as (client, _):
        app = client.server.app
        text = app[METRICS].render().decode()  # what the scrape's handler computes, before it answers
        assert "intent_router_routing_log_queue_length" in text
        assert app[STATS_LOG]._engine is None  # SQLAlchemy was not loaded on the event loop for it
        assert (await client.get("/metrics")).status == 200
        await eventually(lambda: app[STATS_LOG].health()["status"] == "ok")


async def test_a_reader_of_the_log_does_not_wait_for_the_fallback(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        app = client.server.app
        app[START_GATE].disarm()  # no fallback: a reader that waited for it would wait for ever
        await asyncio.wait_for(app[STATS_LOG].ready(), 30)  # e.g. the statistics endpoint: it needs the table now
        assert app[START_GATE].is_open
        assert app[STATS_LOG].health()["status"] == "ok"


async def test_a_server_stopped_before_the_gate_opened_stops_at_once(tmp_path, caplog):
    import logging

    with caplog.at_level(logging.INFO):
        async with running_app(people_tree(tmp_path)) as (client, _):
            app = client.server.app
            app[START_GATE].disarm()  # (the fallback cannot open it while the test looks)
            assert not app[START_GATE].is_open
    # MCP's task and the log's opening gave up waiting instead of holding the stop for their timeouts (MCP
    # warns when its task does not stop in 5 s: no warning below)
    assert not app[START_GATE].is_open  # nothing was loaded on the way out
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("intent_router")]
