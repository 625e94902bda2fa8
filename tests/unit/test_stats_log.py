"""The routing log writer: batching, overflow dropped and counted, failures contained, retention."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa

from server.api.outcome import Outcome
from server.local_sqlite import is_damaged, set_aside_if_damaged
from server.stats import RoutingLog, RoutingRecord, StatsSettings
from server.testing.polling import eventually


def entry(i: int = 0, ts: float | None = None, question: str = "q") -> RoutingRecord:
    return RoutingRecord(
        ts=ts if ts is not None else time.time(),
        kind="query",
        adapter="a",
        outcome=Outcome.EXECUTED,
        selected_adapter="a",
        template_id=f"t{i % 3}",
        combined_score=0.5,
        question=question,
    )


def rows(rlog: RoutingLog) -> list[dict]:
    with rlog.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(rlog.table).order_by(rlog.table.c.id))]


@pytest.fixture
async def make_log(tmp_path):
    logs: list[RoutingLog] = []

    async def make(**settings) -> RoutingLog:
        rlog = RoutingLog(StatsSettings(path=str(tmp_path / f"log{len(logs)}.sqlite3"), **settings), tmp_path)
        await rlog.start()
        logs.append(rlog)
        return rlog

    yield make
    for rlog in logs:
        await rlog.close()


async def test_entries_are_written_in_batches(make_log):
    rlog = await make_log(batch_size=10, flush_interval=0.2)
    for i in range(25):
        assert rlog.record(entry(i))
    await rlog.flush()
    assert len(rows(rlog)) == 25
    assert (rlog.counters.written, rlog.counters.batches, rlog.counters.dropped) == (25, 3, 0)


async def test_a_partial_batch_waits_for_the_flush_interval(make_log):
    rlog = await make_log(batch_size=100, flush_interval=0.4)
    recorded = time.monotonic()
    for i in range(3):
        rlog.record(entry(i))
    await eventually(lambda: rlog.counters.written == 3)  # written without a flush() ...
    assert time.monotonic() - recorded >= 0.35  # ... once the batch had gathered for its interval, not before
    assert len(rows(rlog)) == 3 and rlog.counters.batches == 1


async def test_a_full_queue_drops_and_counts(make_log):
    rlog = await make_log(queue_size=5, batch_size=100, flush_interval=0.05)
    accepted = [rlog.record(entry(i)) for i in range(8)]  # no await: the writer cannot drain meanwhile
    assert accepted == [True] * 5 + [False] * 3
    assert (rlog.counters.accepted, rlog.counters.dropped) == (5, 3)
    await rlog.flush()
    assert len(rows(rlog)) == 5
    assert rlog.status()["dropped"] == 3


async def test_a_failing_database_is_counted_not_raised(make_log):
    # one batch for the six: after a failed write the writer re-makes the table (a replaced file), so a
    # second batch would be written
    rlog = await make_log(batch_size=10, flush_interval=0.05)
    rlog.table.drop(rlog.engine)
    for i in range(6):
        rlog.record(entry(i))
    await rlog.flush()
    assert (rlog.counters.failed, rlog.counters.written) == (6, 0)
    rlog.table.create(rlog.engine)
    rlog.record(entry(9))
    await rlog.flush()
    assert rlog.counters.written == 1  # the writer survived


async def test_question_text_only_when_store_queries(make_log):
    private = await make_log(flush_interval=0.05)
    kept = await make_log(flush_interval=0.05, store_queries=True)
    for rlog in (private, kept):
        rlog.record(entry(question="where is my salary?"))
        await rlog.flush()
    assert rows(private)[0]["question"] is None
    assert rows(kept)[0]["question"] == "where is my salary?"


async def test_retention_removes_only_old_entries(make_log):
    rlog = await make_log(retention_days=30, flush_interval=0.05)
    now = time.time()
    for age_days in (45, 31, 29, 1, 0):
        rlog.record(entry(ts=now - age_days * 86400))
    await rlog.flush()
    assert rlog.purge(now) == 2
    ages = sorted(round((now - r["ts_ms"] / 1000) / 86400) for r in rows(rlog))
    assert ages == [0, 1, 29]
    assert rlog.counters.purged == 2


async def test_retention_runs_at_start(tmp_path):
    settings = StatsSettings(path=str(tmp_path / "log.sqlite3"), retention_days=7, flush_interval=0.05)
    first = RoutingLog(settings, tmp_path)
    await first.start()
    first.record(entry(ts=time.time() - 10 * 86400))
    first.record(RoutingRecord(ts=time.time(), kind="query", adapter="a", outcome=Outcome.NO_MATCH))
    await first.close()
    second = RoutingLog(settings, tmp_path)
    await second.start()
    try:
        assert [r["outcome"] for r in rows(second)] == [Outcome.NO_MATCH]
    finally:
        await second.close()


async def test_close_writes_what_is_queued(tmp_path):
    rlog = RoutingLog(StatsSettings(path=str(tmp_path / "log.sqlite3"), flush_interval=10), tmp_path)
    await rlog.start()
    for i in range(7):
        rlog.record(entry(i))
    started = time.perf_counter()
    await rlog.close(drain_seconds=30)
    assert time.perf_counter() - started < 10  # close writes the partial batch at once
    reopened = RoutingLog(rlog.settings, tmp_path)
    assert len(rows(reopened)) == 7
    assert not rlog.record(entry())  # closed: refused and counted
    reopened.engine.dispose()


async def test_start_soon_takes_entries_before_the_table_exists_and_writes_them(tmp_path):
    """The server opens a local log after it listens: a question answered meanwhile is logged all the same."""
    settings = StatsSettings(path=str(tmp_path / "log.sqlite3"), flush_interval=10, store_queries=True)
    rlog = RoutingLog(settings, tmp_path)
    assert rlog.local
    rlog.start_soon()
    try:
        assert rlog.record(entry(1, question="early"))  # the opening has not run yet: nothing is on disk
        assert rlog.health()["status"] == "starting"
        await rlog.flush()  # waits for the opening, then writes
        assert [r["question"] for r in rows(rlog)] == ["early"]
        assert rlog.health() == {"status": "ok", "failed_writes": 0, "dropped": 0, "written": 1}
    finally:
        await rlog.close()


async def test_a_log_held_back_by_its_gate_opens_for_entries_at_close_and_not_for_none(tmp_path):
    """The server opens its log once it has answered (a StartGate): closed before that, a log holding
    entries opens to write them, and an empty one is not opened at all."""
    from server.start_gate import StartGate

    held = RoutingLog(StatsSettings(path=str(tmp_path / "held.sqlite3"), store_queries=True), tmp_path)
    gate = StartGate()  # a gate nobody opens
    held.start_soon(gate)
    assert held.record(entry(1, question="answered before the gate opened"))
    await eventually(lambda: gate.waiting == 1)  # its opening waits at the gate
    assert held.health()["status"] == "starting" and not (tmp_path / "held.sqlite3").exists()
    await held.close()
    assert [r["question"] for r in rows(held)] == ["answered before the gate opened"]

    empty = RoutingLog(StatsSettings(path=str(tmp_path / "empty.sqlite3")), tmp_path)
    empty.start_soon(StartGate())
    await empty.close()
    assert not (tmp_path / "empty.sqlite3").exists()
    await empty.ready()  # a reader after that stop returns (the opening was cancelled, not the reader)
    await empty.flush()


async def test_start_soon_that_cannot_open_says_why_and_counts_the_entries(tmp_path):
    (tmp_path / "not-a-dir").write_text("a file where the log's directory should be")
    rlog = RoutingLog(StatsSettings(path=str(tmp_path / "not-a-dir" / "log.sqlite3")), tmp_path)
    rlog.start_soon()
    try:
        assert rlog.record(entry(1))
        await rlog.flush()  # returns: the entry will never be written
        health = rlog.health()
        assert health["status"] == "failing" and health["failed_writes"] == 1
        assert health["reason"].startswith("cannot open the database:")
        assert not rlog.record(entry(2))  # later entries are dropped and counted
        assert rlog.counters.dropped == 1
    finally:
        await rlog.close()


def test_only_a_sqlite_log_is_local(tmp_path):
    assert RoutingLog(StatsSettings(url="sqlite:///x.sqlite3"), tmp_path).local
    assert not RoutingLog(StatsSettings(url="postgresql://u@127.0.0.1/db"), tmp_path).local


async def test_a_damaged_log_file_is_set_aside_and_a_new_one_started(make_log, tmp_path):
    """Damage never heals by retrying: the file (kept for inspection) makes way for a new one, and entries are
    written again; a second process sharing the path finds the new file sound and only reconnects."""
    rlog = await make_log(flush_interval=0.01)
    rlog.record(entry(0))
    await rlog.flush()
    path = tmp_path / "log0.sqlite3"
    with path.open("r+b") as f:  # a header that is no database's
        f.write(b"this is not a SQLite database file at all")
    failed = rlog.counters.failed
    rlog.record(entry(1))
    await rlog.flush()
    assert rlog.counters.failed == failed + 1
    assert rlog.health()["status"] == "failing"

    async def written_again() -> bool:
        rlog.record(entry(2))
        await rlog.flush()
        return rlog.health()["status"] == "ok"

    await eventually(written_again, 10)
    [aside] = tmp_path.glob("log0.sqlite3.damaged-*")
    assert aside.read_bytes().startswith(b"this is not")
    assert [r["template_id"] for r in rows(rlog)][-1] == "t2"
    assert set_aside_if_damaged(path) is None  # sound now: a sibling coming second leaves it


def test_only_damage_counts_as_damage(tmp_path):
    import sqlite3

    bad = tmp_path / "bad.sqlite3"
    bad.write_bytes(b"x" * 4096)
    with pytest.raises(sqlite3.DatabaseError) as damaged:
        sqlite3.connect(bad).execute("SELECT * FROM sqlite_master").fetchall()
    assert is_damaged(damaged.value)
    with pytest.raises(sqlite3.OperationalError) as missing:
        sqlite3.connect(tmp_path / "ok.sqlite3").execute("SELECT * FROM no_such_table")
    assert not is_damaged(missing.value)
