"""The circuit breaker's rules that nothing else pins (issue 31), against a real HTTP adapter on a loopback
API: a query timeout counts as the source being unwell (it opens the circuit), and a half-open probe
cancelled by the request's timeout lets the next caller probe instead of leaving the circuit rejecting every
call until a reload. Time moves by the breaker's injected clock, never by sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from server.errors import SourceTimeout, SourceUnavailable
from server.resilience import CircuitBreakerSettings, RetrySettings, SourceGuard
from server.testing.adapter_harness import started
from server.testing.flaky_api import ITEMS, FlakyApi
from server.testing.polling import eventually

LIBRARY = """
templates:
  - id: items
    description: All items
    http: {path: /items, response: {items_path: items}}
"""
RESET = 30.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def api() -> AsyncIterator[FlakyApi]:
    async with FlakyApi() as server:
        yield server


def settings(api: FlakyApi, **extra: object) -> dict:
    return {
        "name": "flaky",
        "type": "http",
        "connection": {"url": api.base_url},
        "retries": {"max_attempts": 1},
        "circuit_breaker": {"failure_threshold": 1, "reset_timeout": RESET},
        **extra,
    }


async def test_a_query_timeout_opens_the_circuit(tmp_path, api):
    async with started(tmp_path, settings(api, query_timeout=0.2), LIBRARY) as adapter:
        api.delay = 5.0  # slower than query_timeout: a 504 source_timeout, not a transient error
        with pytest.raises(SourceTimeout):
            await adapter.run(adapter.templates["items"], {})
        assert adapter.guard.breaker.state == "open"
        with pytest.raises(SourceUnavailable, match="circuit open after 1 consecutive failures"):
            await adapter.run(adapter.templates["items"], {})
        assert len(api.arrivals) == 1  # the open circuit did not ask the source


async def test_a_probe_cancelled_by_the_requests_timeout_lets_the_next_call_probe(tmp_path, api):
    clock = Clock()
    guard = SourceGuard(
        "flaky",
        RetrySettings(max_attempts=1),
        CircuitBreakerSettings(failure_threshold=1, reset_timeout=RESET),
        clock=clock,
    )
    async with started(tmp_path, settings(api), LIBRARY) as adapter:
        template = adapter.templates["items"]

        def query():
            return guard.call(lambda: adapter.execute(template, {}))

        api.down = True
        with pytest.raises(SourceUnavailable, match="HTTP 503"):
            await query()
        assert guard.breaker.state == "open"
        clock.now += RESET
        assert guard.breaker.state == "half_open"

        api.down, api.delay = False, 30.0  # the probe hangs until the request's timeout cancels it
        timeouts: list[asyncio.Timeout] = []

        async def request() -> None:
            async with asyncio.timeout(None) as timeout:  # what the web layer wraps around each request
                timeouts.append(timeout)
                await query()

        probe = asyncio.create_task(request())
        await eventually(lambda: len(api.arrivals) == 2)  # the probe reached the source
        with pytest.raises(SourceUnavailable, match="circuit open"):  # one probe at a time
            await query()
        timeouts[0].reschedule(asyncio.get_running_loop().time())  # the request's time is up
        with pytest.raises(TimeoutError):
            await probe

        api.delay = 0.0
        assert (await query()).rows == ITEMS  # the next call probes (and closes the circuit)
        assert guard.breaker.state == "closed"
