"""Retries with backoff and the circuit breaker (server/resilience.py) against real sources:
a loopback HTTP API that fails on command (retries counted on the server side), Retry-After honoured
and bounded by the request's deadline, permanent errors never retried, breaker open -> immediate 503
-> half-open probe -> closed, and a PostgreSQL query whose connection is killed with
pg_terminate_backend mid-flight."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pydantic
import pytest

from server.adapters.base import Adapter
from server.adapters.sql import SQLAdapterSettings
from server.errors import QueryFailed, SourceUnavailable
from server.resilience import CircuitBreakerSettings, RetrySettings, SourceGuard, request_deadline, retry_call
from server.testing.adapter_harness import started
from server.testing.clock import ManualClock
from server.testing.flaky_api import ITEMS, FlakyApi
from server.testing.polling import eventually

LIBRARY = """
templates:
  - id: items
    description: All items
    http: {path: /items, response: {items_path: items}}
  - id: missing
    description: A path the API does not have
    http: {path: /nothing}
"""
FAST = {"backoff_initial": 0.01, "backoff_max": 0.05}


def http_settings(api: FlakyApi, **extra: object) -> dict:
    return {"name": "flaky", "type": "http", "connection": {"url": api.base_url}, "retries": FAST, **extra}


@pytest.fixture
async def api() -> AsyncIterator[FlakyApi]:
    async with FlakyApi() as server:
        yield server


async def run(adapter: Adapter, template: str = "items"):
    return await adapter.run(adapter.templates[template], {})


# ---- retries -------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [502, 503, 504, 429])
async def test_fails_n_times_then_succeeds(tmp_path, api, status):
    async with started(tmp_path, http_settings(api), LIBRARY) as adapter:
        api.fail(2, status)
        result = await run(adapter)
        assert result.rows == ITEMS
        assert len(api.arrivals) == 3  # seen by the server: two failures, one success
        assert adapter.guard.stats.retries == 2


async def test_attempts_are_bounded_and_say_so(tmp_path, api):
    async with started(tmp_path, http_settings(api, retries={**FAST, "max_attempts": 4}), LIBRARY) as adapter:
        api.fail(10, 503)
        with pytest.raises(SourceUnavailable) as caught:
            await run(adapter)
        assert len(api.arrivals) == 4
    assert caught.value.status == 503
    assert caught.value.message == "adapter 'flaky': source answered HTTP 503 (after 4 attempts)"


async def test_max_attempts_one_turns_retries_off(tmp_path, api):
    async with started(tmp_path, http_settings(api, retries={"max_attempts": 1}), LIBRARY) as adapter:
        api.fail(1, 503)
        with pytest.raises(SourceUnavailable):
            await run(adapter)
        assert len(api.arrivals) == 1


async def test_backoff_grows_with_jitter_within_bounds(tmp_path, api):
    retries = {"max_attempts": 4, "backoff_initial": 0.1, "backoff_max": 0.15}
    settings = RetrySettings(**retries)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # the waits the retry loop chose, told without waiting them
        waits.append(seconds)

    async with started(tmp_path, http_settings(api, retries=retries), LIBRARY) as adapter:
        api.fail(3, 503)
        await retry_call(lambda: adapter.execute(adapter.templates["items"], {}), settings, sleep=sleep)
    assert len(api.arrivals) == 4 and len(waits) == 3
    assert waits[0] <= 0.1 and waits[1] <= 0.15 and waits[2] <= 0.15  # full jitter, capped
    assert [settings.backoff(n, rng=lambda: 1.0) for n in (1, 2, 3)] == [0.1, 0.15, 0.15]
    assert settings.backoff(1, rng=lambda: 0.0) == 0.0


@pytest.mark.parametrize("header", ["0.4", "http-date"])
async def test_429_retry_after_is_honoured(tmp_path, api, header):
    if header == "http-date":
        from datetime import UTC, datetime, timedelta
        from email.utils import format_datetime

        header = format_datetime(datetime.now(UTC) + timedelta(seconds=1.4), usegmt=True)  # whole seconds
    async with started(tmp_path, http_settings(api), LIBRARY) as adapter:
        api.fail(1, 429, retry_after=header)
        result = await run(adapter)
    assert result.rows == ITEMS and len(api.arrivals) == 2
    assert api.arrivals[1] - api.arrivals[0] >= 0.38  # waited as told, far above backoff_max 0.05


async def test_retry_after_past_the_request_deadline_fails_at_once(tmp_path, api):
    async with started(tmp_path, http_settings(api), LIBRARY) as adapter:
        api.fail(1, 503, retry_after="30")
        started_at = time.monotonic()
        with request_deadline(20.0), pytest.raises(SourceUnavailable, match="HTTP 503"):
            await run(adapter)
        # at once: neither the 30 s asked for nor until the deadline (a margin no loaded machine needs)
        assert time.monotonic() - started_at < 20.0
        assert len(api.arrivals) == 1


async def test_retries_stop_at_the_request_deadline(tmp_path, api):
    retries = {"max_attempts": 10, "backoff_initial": 0.2, "backoff_max": 0.2}
    async with started(tmp_path, http_settings(api, retries=retries), LIBRARY) as adapter:
        # Retry-After 0.15 s puts a floor under each wait (full jitter alone could fit all ten attempts
        # into 0.5 s about once in a hundred runs): at most four attempts fit before the deadline
        api.fail(100, 503, retry_after="0.15")
        started_at = time.monotonic()
        with request_deadline(0.5), pytest.raises(SourceUnavailable):
            await run(adapter)
    # no wait is started that would end past the deadline: every attempt was sent before it (the arrivals
    # are the API's clock, the same monotonic clock), and at most four fit with waits of at least 0.15 s.
    # Without the rule: all ten attempts, 1.35-1.8 s. (No bound on the end: a loaded machine may be slow.)
    assert all(arrival < started_at + 0.5 for arrival in api.arrivals[:-1])
    assert 1 <= len(api.arrivals) <= 4


async def test_client_errors_are_never_retried(tmp_path, api):
    async with started(tmp_path, http_settings(api), LIBRARY) as adapter:
        with pytest.raises(QueryFailed, match="HTTP 404"):
            await run(adapter, "missing")
        assert len(api.arrivals) == 1
        api.fail(1, 400)
        with pytest.raises(QueryFailed, match="HTTP 400"):
            await run(adapter)
        assert len(api.arrivals) == 2
        assert adapter.guard.stats.retries == 0


async def test_a_500_is_the_sources_own_error_and_never_retried(tmp_path, api):
    """One definition of a transient HTTP status (resilience.transient_http_status): 429/502/503/504, not 500."""
    async with started(tmp_path, http_settings(api, retries={**FAST, "max_attempts": 3}), LIBRARY) as adapter:
        api.fail(3, 500)
        with pytest.raises(SourceUnavailable, match=r"source answered HTTP 500$"):
            await run(adapter)
        assert len(api.arrivals) == 1
        assert adapter.guard.stats.retries == 0


async def test_connection_refused_is_retried(tmp_path):
    async with FlakyApi() as api:
        url = api.base_url
    settings = {"name": "flaky", "type": "http", "connection": {"url": url}, "retries": {**FAST, "max_attempts": 3}}
    async with started(tmp_path, settings, LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable, match=r"cannot reach the source \(after 3 attempts\)"):
            await run(adapter)


# ---- circuit breaker -----------------------------------------------------------------------------


def breaker_settings(api: FlakyApi, threshold: int = 2, reset: float = 0.4) -> dict:
    return http_settings(
        api, retries={"max_attempts": 1}, circuit_breaker={"failure_threshold": threshold, "reset_timeout": reset}
    )


RESET = 30.0  # the breaker's reset_timeout below: time passes on a hand-moved clock, never by sleeping


def clocked_guard(clock: ManualClock, threshold: int) -> SourceGuard:
    """The adapter's retries and breaker (one attempt, `threshold` failures open it) on the test's clock."""
    breaker = CircuitBreakerSettings(failure_threshold=threshold, reset_timeout=RESET)
    return SourceGuard("flaky", RetrySettings(max_attempts=1), breaker, clock=clock)


def guarded(guard: SourceGuard, adapter: Adapter, template: str = "items"):
    """One query of the adapter's source through `guard`, as `adapter.run` goes through its own."""
    return guard.call(lambda: adapter.execute(adapter.templates[template], {}))


async def test_breaker_opens_answers_503_at_once_then_half_open_probe_closes_it(tmp_path, api):
    clock = ManualClock()
    guard = clocked_guard(clock, threshold=2)
    async with started(tmp_path, breaker_settings(api), LIBRARY) as adapter:
        api.down = True
        api.delay = 0.2  # a slow, failing source: every call costs time until the circuit opens
        for _ in range(2):
            with pytest.raises(SourceUnavailable, match="HTTP 503"):
                await guarded(guard, adapter)
        assert guard.breaker.state == "open"

        api.delay = 60.0  # were the source asked now, the call would hang: the open circuit answers instead
        with pytest.raises(SourceUnavailable) as caught:
            await guarded(guard, adapter)
        assert caught.value.status == 503 and "circuit open after 2 consecutive failures" in caught.value.message
        assert len(api.arrivals) == 2  # the source was not asked

        api.down, api.delay = False, 0.0
        clock.advance(RESET * 0.99)
        assert guard.breaker.state == "open"
        clock.advance(RESET * 0.01)
        assert guard.breaker.state == "half_open"
        assert (await guarded(guard, adapter)).rows == ITEMS  # the probe
        assert guard.breaker.state == "closed"
        assert (await guarded(guard, adapter)).rows == ITEMS
        assert guard.snapshot()["rejected"] == 1


async def test_failed_probe_opens_the_circuit_again(tmp_path, api):
    clock = ManualClock()
    guard = clocked_guard(clock, threshold=1)
    async with started(tmp_path, breaker_settings(api, threshold=1), LIBRARY) as adapter:
        api.down = True
        with pytest.raises(SourceUnavailable):
            await guarded(guard, adapter)
        clock.advance(RESET)
        with pytest.raises(SourceUnavailable, match="HTTP 503"):  # the probe reached the source and failed
            await guarded(guard, adapter)
        assert len(api.arrivals) == 2
        clock.advance(RESET * 0.99)
        with pytest.raises(SourceUnavailable, match="circuit open"):  # open again, full cool-down
            await guarded(guard, adapter)
        assert len(api.arrivals) == 2


async def test_half_open_lets_one_probe_through(tmp_path, api):
    clock = ManualClock()
    guard = clocked_guard(clock, threshold=1)
    async with started(tmp_path, breaker_settings(api, threshold=1), LIBRARY) as adapter:
        api.down = True
        with pytest.raises(SourceUnavailable):
            await guarded(guard, adapter)
        api.down = False
        clock.advance(RESET)
        # two callers at once: the first is admitted as the probe before the second asks
        results = await asyncio.gather(guarded(guard, adapter), guarded(guard, adapter), return_exceptions=True)
        assert [r.rows if not isinstance(r, Exception) else "rejected" for r in results] == [ITEMS, "rejected"]
        assert len(api.arrivals) == 2  # the failure and the single probe


async def test_permanent_errors_do_not_open_the_circuit(tmp_path, api):
    async with started(tmp_path, breaker_settings(api, threshold=2), LIBRARY) as adapter:
        api.fail(1, 503)
        with pytest.raises(SourceUnavailable):
            await run(adapter)
        with pytest.raises(QueryFailed):  # the source answered (404): it is alive, the count starts again
            await run(adapter, "missing")
        api.fail(1, 503)
        with pytest.raises(SourceUnavailable, match="HTTP 503"):
            await run(adapter)
        assert adapter.guard.breaker.state == "closed"


async def test_breaker_can_be_disabled(tmp_path, api):
    settings = http_settings(
        api, retries={"max_attempts": 1}, circuit_breaker={"enabled": False, "failure_threshold": 1}
    )
    async with started(tmp_path, settings, LIBRARY) as adapter:
        api.down = True
        for _ in range(3):
            with pytest.raises(SourceUnavailable, match="HTTP 503"):
                await run(adapter)
        assert len(api.arrivals) == 3


@pytest.mark.parametrize(
    "bad",
    [
        {"retries": {"max_attempts": 0}},
        {"retries": {"attempts": 3}},
        {"retries": {"backoff_initial": 1.0, "backoff_max": 0.5}},
        {"circuit_breaker": {"failure_threshold": 0}},
        {"circuit_breaker": {"reset_timeout": 0}},
        {"circuit_breaker": {"cooldown": 5}},
    ],
)
def test_settings_are_checked(bad: dict):
    with pytest.raises(pydantic.ValidationError):
        SQLAdapterSettings(name="x", type="sql", templates=["t.yaml"], connection={"url": "sqlite://"}, **bad)


# ---- PostgreSQL: a connection killed mid-query ----------------------------------------------------

PG_LIBRARY = """
templates:
  - id: slow_count
    description: A count that takes about a second
    sql: "SELECT count(*) AS n FROM generate_series(1, 15000000) AS g"
  - id: bad_column
    description: A query the server rejects
    sql: "SELECT no_such_column FROM products"
"""


def pg_settings(db, **extra: object) -> dict:
    return {"name": "inventory", "type": "sql", "connection": {"url": db.url}, "query_timeout": 20, **extra}


async def kill_when_running(admin_url: str, application: str) -> int:
    """pg_terminate_backend the adapter's session (found by its `application_name`) as soon as it runs a
    query. The adapter reads PostgreSQL through a server-side cursor, so while the query runs its session
    shows the cursor's `FETCH` rather than the query's text (PostgreSQL 15 does)."""
    import psycopg

    dsn = admin_url.replace("postgresql+psycopg://", "postgresql://")
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        for _ in range(200):
            cur = await conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND application_name = %s",
                (application,),
            )
            row = await cur.fetchone()
            if row:
                await conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                return row[0]
            await asyncio.sleep(0.02)
    raise AssertionError("the query never showed up in pg_stat_activity")


@pytest.mark.parametrize("attempts", [3, 1], ids=["retried", "no-retries"])
async def test_postgres_connection_killed_mid_query(tmp_path, pg_database, attempts):
    application = f"ir_kill_test_{uuid.uuid4().hex[:8]}"  # tells the adapter's session from any other
    settings = pg_settings(pg_database, retries={**FAST, "max_attempts": attempts})
    settings["connection"] = {"url": f"{pg_database.url}&application_name={application}"}
    async with started(tmp_path, settings, PG_LIBRARY) as adapter:
        query = asyncio.ensure_future(run(adapter, "slow_count"))
        await kill_when_running(pg_database.admin_url, application)
        if attempts == 1:
            with pytest.raises(SourceUnavailable) as caught:
                await query
            assert caught.value.status == 503
            assert adapter.guard.stats.attempts == 1
        else:
            result = await query
            assert result.rows == [{"n": 15000000}]
            assert adapter.guard.stats.attempts == 2  # the killed attempt and the one that succeeded
        assert (await run(adapter, "slow_count")).rows == [{"n": 15000000}]  # the pool healed


async def test_postgres_query_errors_are_not_retried(tmp_path, pg_database):
    async with started(tmp_path, pg_settings(pg_database, retries=FAST), PG_LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as caught:
            await run(adapter, "bad_column")
        assert adapter.guard.stats.attempts == 1
    assert caught.value.status == 502 and "after" not in caught.value.message


# ---- SQLite: a database locked by a writer for a moment -------------------------------------------

SQLITE_LIBRARY = """
templates:
  - id: count
    description: Count the rows
    sql: "SELECT count(*) AS n FROM t"
"""


@pytest.mark.parametrize("attempts", [5, 1], ids=["retried", "no-retries"])
async def test_sqlite_busy_is_retried(tmp_path, attempts):
    import sqlite3
    import threading

    path = tmp_path / "busy.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x INTEGER)")
        db.execute("INSERT INTO t VALUES (1), (2)")
    settings = {
        "name": "local",
        "type": "sql",
        "connection": {"url": f"sqlite:///{path}", "connect_timeout": 0.05},  # busy after 50 ms
        "retries": {"max_attempts": attempts, "backoff_initial": 0.1, "backoff_max": 0.2},
    }
    async with started(tmp_path, settings, SQLITE_LIBRARY) as adapter:
        writer = sqlite3.connect(path, check_same_thread=False)
        writer.execute("BEGIN EXCLUSIVE")  # readers get SQLITE_BUSY until it ends
        release = threading.Timer(0.25, writer.rollback)
        release.start()
        try:
            if attempts == 1:
                with pytest.raises(SourceUnavailable):
                    await run(adapter, "count")
            else:
                assert (await run(adapter, "count")).rows == [{"n": 2}]
                assert adapter.guard.stats.attempts >= 2
        finally:
            release.join()
            writer.close()


# ---- through the HTTP API: a dead source answers 503 at once -----------------------------------------


async def test_http_api_dead_source_answers_503_at_once(tmp_path, api):
    from server.testing.app import running_app
    from server.testing.configs import BASE_CONFIG, make_tree

    adapters = f"""
adapters:
  - name: flaky
    type: http
    connection: {{url: "{api.base_url}"}}
    templates: ["templates/flaky/*.yaml"]
    confidence_threshold: 0.1
    retries: {{max_attempts: 2, backoff_initial: 0.01, backoff_max: 0.02}}
    circuit_breaker: {{failure_threshold: 2, reset_timeout: 0.5}}
"""
    library = """
templates:
  - id: items
    description: List all the items in the catalogue
    nl_examples: ["show me all items", "list the items"]
    http: {path: /items, response: {items_path: items}}
"""
    config_dir = make_tree(tmp_path, BASE_CONFIG, {"flaky.yaml": adapters}, {"flaky/items.yaml": library})
    async with running_app(config_dir) as (client, holder):
        ask = {"query": "list the items", "adapter": "flaky"}
        api.down, api.delay = True, 0.1
        for _ in range(2):
            response = await client.post("/v1/query", json=ask)
            assert response.status == 503
            assert (await response.json())["error"]["message"].endswith("HTTP 503 (after 2 attempts)")
        assert len(api.arrivals) == 4

        response = await client.post("/v1/query", json=ask)
        body = await response.json()
        assert response.status == 503 and body["error"]["code"] == "source_unavailable"
        # answered at once: no request reached the dead source
        assert "circuit open" in body["error"]["message"] and len(api.arrivals) == 4

        api.down, api.delay = False, 0.0
        breaker = holder.current.get("flaky").adapter.guard.breaker
        await eventually(lambda: breaker.state == "half_open")  # reset_timeout (0.5 s) has passed
        response = await client.post("/v1/query", json=ask)
        assert response.status == 200 and (await response.json())["rows"] == ITEMS


# ---- MariaDB: a connection killed mid-query ---------------------------------------------------------

MARIA_LIBRARY = """
templates:
  - id: slow_count
    description: A count that takes about a second
    sql: "SELECT count(*) AS n FROM seq_1_to_10000000 WHERE seq % 7 = 3"
"""


PROCESS_OF = "SELECT id FROM information_schema.processlist WHERE info LIKE %s AND id <> CONNECTION_ID()"


@pytest.mark.parametrize("attempts", [3, 1], ids=["retried", "no-retries"])
async def test_mariadb_connection_killed_mid_query(tmp_path, mariadb_database, attempts):
    from server.testing.mariadb import _connect

    settings = {
        "name": "inventory",
        "type": "sql",
        "connection": {"url": mariadb_database.url},
        "query_timeout": 20,
        "retries": {**FAST, "max_attempts": attempts},
    }
    async with started(tmp_path, settings, MARIA_LIBRARY) as adapter:
        query = asyncio.ensure_future(run(adapter, "slow_count"))

        def kill() -> None:
            conn = _connect(mariadb_database.url)
            try:
                with conn.cursor() as cur:
                    for _ in range(200):
                        cur.execute(PROCESS_OF, ("%seq_1_to_10000000%",))
                        row = cur.fetchone()
                        if row:
                            cur.execute(f"KILL CONNECTION {int(row[0])}")
                            return
                        time.sleep(0.02)
            finally:
                conn.close()
            raise AssertionError("the query never showed up in the processlist")

        await asyncio.to_thread(kill)
        if attempts == 1:
            with pytest.raises(SourceUnavailable):
                await query
        else:
            assert (await query).rows == [{"n": 1428572}]
            assert adapter.guard.stats.attempts == 2
