"""Encoder lanes: a lone question on the wide runner, concurrent ones shared out over the lanes, wide and
lane passes never at once; the real MiniLM lanes give the wide session's vectors."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from server.embedding.batching import Lane, QuestionBatcher
from server.embedding.lanes import MAX_AUTO_LANES, PassGate, resolve_lanes, set_worker_count


def until(check, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.005)


class Runners:
    """Fake runners that record every pass (which runner, which texts) and how many ran at once."""

    def __init__(self, lanes: int) -> None:
        self.gate = threading.Event()
        self.lanes_gate = threading.Event()  # also holds the lanes' passes (set: not held)
        self.lanes_gate.set()
        self.passes: list[tuple[str, list[str]]] = []
        self.running: set[str] = set()
        self.overlaps: list[frozenset[str]] = []
        self._lock = threading.Lock()
        self.pools = [ThreadPoolExecutor(max_workers=1) for _ in range(lanes + 1)]
        self.wide = self.pools[0]
        self.lanes = [Lane(self._encoder(f"lane{i}"), pool) for i, pool in enumerate(self.pools[1:])]

    def _encoder(self, name: str):
        def encode(texts: list[str]) -> np.ndarray:
            with self._lock:
                self.running.add(name)
                self.overlaps.append(frozenset(self.running))
            self.gate.wait(5)
            if name != "wide":
                self.lanes_gate.wait(5)
            time.sleep(0.01)
            with self._lock:
                self.running.discard(name)
                self.passes.append((name, texts))
            return np.array([[float(len(t))] for t in texts], dtype=np.float32)

        return encode

    def batcher(self, max_batch: int = 16) -> QuestionBatcher:
        return QuestionBatcher(self._encoder("wide"), self.wide, max_batch, self.lanes)

    def close(self) -> None:
        self.gate.set()
        for pool in self.pools:
            pool.shutdown(wait=True)


@pytest.fixture
def runners():
    made: list[Runners] = []

    def make(lanes: int) -> Runners:
        made.append(Runners(lanes))
        return made[-1]

    yield make
    for r in made:
        r.close()


def test_a_lone_question_runs_on_the_wide_runner(runners):
    r = runners(2)
    r.gate.set()
    batcher = r.batcher()
    for text in ("one", "two", "three"):  # one at a time: never more than one waiting
        assert batcher.submit(text).result(5).tolist() == [float(len(text))]
    assert [name for name, _ in r.passes] == ["wide", "wide", "wide"]
    assert batcher.stats.lane_calls == 0


def test_queued_questions_are_shared_out_evenly_over_the_lanes(runners):
    r = runners(2)
    batcher = r.batcher()
    first = batcher.submit("first")  # alone: the wide runner, held at the gate
    queued = [batcher.submit(f"q{i}") for i in range(7)]
    r.gate.set()
    assert first.result(5).tolist() == [5.0]
    assert [f.result(5).tolist() for f in queued] == [[2.0]] * 7
    assert r.passes[0] == ("wide", ["first"])
    later = sorted(r.passes[1:])
    assert later == [("lane0", ["q0", "q1", "q2", "q3"]), ("lane1", ["q4", "q5", "q6"])]
    assert batcher.stats.lane_calls == 2 and batcher.stats.questions == 8


def test_a_lane_pass_beside_another_waits_for_the_lane_floor(runners):
    r = runners(2)
    batcher = r.batcher()
    batcher.set_lanes(r.lanes, lane_floor=3)
    r.lanes_gate.clear()
    first = batcher.submit("first")  # alone: the wide runner, held at the gate
    queued = [batcher.submit(f"q{i}") for i in range(3)]
    r.gate.set()
    first.result(5)
    until(lambda: r.running == {"lane0"})  # 3 waiting, floor 3: one pass of 3, not 2 + 1
    held = [batcher.submit(f"a{i}") for i in range(2)]
    time.sleep(0.05)
    assert r.running == {"lane0"}  # 2 < 3 beside a running pass: they wait
    held.append(batcher.submit("a2"))
    until(lambda: r.running == {"lane0", "lane1"})  # 3 waiting: a pass of its own beside the other
    r.lanes_gate.set()
    for f in queued + held:
        f.result(5)
    assert sorted(r.passes[1:]) == [("lane0", ["q0", "q1", "q2"]), ("lane1", ["a0", "a1", "a2"])]
    assert batcher.lane_floor == 3


def test_held_questions_go_with_the_next_pass_when_a_runner_finishes(runners):
    r = runners(2)
    batcher = r.batcher()
    batcher.set_lanes(r.lanes, lane_floor=4)
    r.lanes_gate.clear()
    first = batcher.submit("first")
    queued = [batcher.submit(f"q{i}") for i in range(2)]
    r.gate.set()
    first.result(5)
    until(lambda: r.running == {"lane0"})  # 2 waiting, nothing running: one pass of both
    held = [batcher.submit(f"a{i}") for i in range(3)]  # 3 < 4 beside it: held for lane0
    time.sleep(0.05)
    r.lanes_gate.set()
    for f in queued + held:
        f.result(5)
    assert r.passes[1:] == [("lane0", ["q0", "q1"]), ("lane0", ["a0", "a1", "a2"])]
    with pytest.raises(ValueError, match="lane_floor"):
        batcher.set_lanes(r.lanes, lane_floor=0)


def test_wide_and_lane_passes_never_overlap_and_lanes_stay_within_max_batch(runners):
    r = runners(2)
    batcher = r.batcher(max_batch=3)
    futures = [batcher.submit("w")]
    futures += [batcher.submit(f"q{i:02d}") for i in range(20)]
    r.gate.set()
    for f in futures:
        f.result(5)
    assert all(len(texts) <= 3 for _, texts in r.passes)
    assert sum(len(texts) for _, texts in r.passes) == 21
    assert not any("wide" in seen and len(seen) > 1 for seen in r.overlaps)
    assert any(seen == {"lane0", "lane1"} for seen in r.overlaps)  # the lanes did run side by side


def test_without_lanes_every_pass_is_wide_and_lanes_can_be_dropped(runners):
    r = runners(2)
    batcher = r.batcher()
    batcher.set_lanes([])
    first = batcher.submit("first")
    queued = [batcher.submit(f"q{i}") for i in range(5)]
    r.gate.set()
    first.result(5)
    for f in queued:
        f.result(5)
    assert [name for name, _ in r.passes] == ["wide", "wide"]
    assert r.passes[1][1] == [f"q{i}" for i in range(5)]


def test_dropped_lanes_finish_before_the_wide_runner_takes_over(runners):
    r = runners(2)
    batcher = r.batcher()
    r.lanes_gate.clear()
    first = batcher.submit("first")  # wide
    busy = [batcher.submit(f"q{i}") for i in range(4)]  # both lanes, once the wide pass is done
    r.gate.set()
    first.result(5)
    until(lambda: len(r.running) == 2)  # the two lanes are in their (held) passes
    batcher.set_lanes([])
    after = [batcher.submit(f"after{i}") for i in range(3)]
    time.sleep(0.05)
    assert "wide" not in r.running  # the dropped lanes still run: the wide runner waits for them
    r.lanes_gate.set()
    for f in busy + after:
        f.result(5)
    assert not any("wide" in seen and len(seen) > 1 for seen in r.overlaps)
    assert r.passes[-1] == ("wide", [f"after{i}" for i in range(3)])


def test_a_pass_that_breaks_after_the_encoder_fails_its_questions_and_keeps_the_runner(runners):
    r = runners(1)
    r.gate.set()
    broken = Lane(lambda texts: np.zeros((len(texts) - 1, 1), dtype=np.float32), r.pools[1])  # a row short
    batcher = QuestionBatcher(r.lanes[0].encode, r.wide, 16, [broken])
    gate = threading.Event()
    hold = r.wide.submit(gate.wait, 5)  # the wide runner's thread is busy: the first question waits there
    first = batcher.submit("first")
    queued = [batcher.submit(f"q{i}") for i in range(3)]  # the broken lane
    gate.set()
    hold.result(5)
    first.result(5)
    for f in queued:
        with pytest.raises(RuntimeError, match="returned 2 vectors for 3 questions"):
            f.result(5)
    assert batcher.submit("later").result(5).tolist() == [5.0]  # nothing is left marked busy


def test_a_lane_whose_executor_is_gone_fails_its_questions_not_hangs_them(runners):
    r = runners(1)
    batcher = r.batcher()
    r.pools[1].shutdown()
    first = batcher.submit("first")  # wide
    queued = [batcher.submit(f"q{i}") for i in range(3)]
    r.gate.set()
    assert first.result(5).tolist() == [5.0]
    for f in queued:
        with pytest.raises(RuntimeError):
            f.result(5)


def test_lane_counts():
    assert resolve_lanes(3) == 3 and resolve_lanes(0) == 0  # as configured
    assert resolve_lanes(None, cores=1) == 0  # one core: the wide session is one thread already
    assert resolve_lanes(None, cores=2) == 2
    assert resolve_lanes(None, cores=64) == MAX_AUTO_LANES
    assert resolve_lanes(None, cores=2, workers=2) == 1  # each worker's share of the cores
    assert resolve_lanes(None, cores=8, workers=2) == 4
    set_worker_count(2)  # what serve --workers 2 sets before forking
    try:
        assert resolve_lanes(None, cores=2) == 1
    finally:
        set_worker_count(1)


def test_the_gate_runs_lanes_together_and_a_wide_pass_alone_first_in_line():
    gate = PassGate()
    events: list[str] = []
    lane_in, release_lane = threading.Event(), threading.Event()

    def lane(name: str, entered: threading.Event | None = None) -> None:
        with gate.lane():
            events.append(f"{name} in")
            if entered is not None:
                entered.set()
            release_lane.wait(5)
            events.append(f"{name} out")

    def wide() -> None:
        with gate.wide():
            events.append("wide in")
            events.append("wide out")

    first = threading.Thread(target=lane, args=("lane A", lane_in))
    first.start()
    assert lane_in.wait(5)
    second_in = threading.Event()
    second = threading.Thread(target=lane, args=("lane B", second_in))
    second.start()
    assert second_in.wait(5)  # lanes share the gate
    waiting = threading.Thread(target=wide)
    waiting.start()
    until(lambda: gate._wide_waiting == 1)
    late = threading.Thread(target=lane, args=("lane C",))
    late.start()  # arrives while the wide pass waits: goes after it
    time.sleep(0.05)
    assert "wide in" not in events and "lane C in" not in events
    release_lane.set()
    for t in (first, second, waiting, late):
        t.join(5)
    assert events.index("wide in") > max(events.index("lane A out"), events.index("lane B out"))
    assert events.index("lane C in") > events.index("wide out")


def test_real_lanes_give_the_wide_sessions_vectors_and_views(minilm_embedder):
    model = minilm_embedder.model
    before = model.lanes
    assert model.set_lanes(2).result(60) == 2
    try:
        questions = [f"how do I {verb} my card? (lanes {i})" for i, verb in enumerate(["top up", "freeze"] * 6)]

        async def together() -> list[np.ndarray]:
            return await asyncio.gather(*(minilm_embedder.embed_query(q) for q in questions))

        calls = model.questions.stats.lane_calls
        vectors = asyncio.run(together())
        assert model.questions.stats.lane_calls > calls  # they queued behind the first and ran on lanes
        alone = model.encode(questions, 1)  # the wide session, one question per pass
        np.testing.assert_allclose(np.stack(vectors), alone, rtol=0, atol=2e-6)
    finally:
        assert model.set_lanes(before).result(60) == before


def test_a_lane_that_cannot_open_is_left_out_and_the_main_session_serves(tmp_path, monkeypatch, caplog):
    from server.embedding import minilm

    model = minilm.MiniLMModel(tmp_path / "models")
    opened = []

    def failing(ort, source, options):  # the second lane's session cannot be created
        if len(opened) == 1:
            raise MemoryError("no room for another session")
        opened.append(source)
        return original(ort, source, options)

    original = minilm._open_session
    monkeypatch.setattr(minilm, "_open_session", failing)
    assert model.set_lanes(2).result(60) == 1
    assert "cannot open encoder lane 1" in caplog.text
    assert model.encode(["still answers"], 1).shape == (1, 384)
