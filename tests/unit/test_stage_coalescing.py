"""A batching stage scores the questions of concurrent requests in one `score_many`; each caller gets
its own report, its own error, and a caller that gives up does not disturb the others."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from server.routing.candidates import Candidate
from server.routing.stages.base import ScoringStage, StageReport
from server.templates import Template
from server.testing.polling import eventually


def candidates(n: int = 2) -> list[Candidate]:
    return [
        Candidate("a", Template(id=f"t{i}", description="d", body_key="sql", body="SELECT 1"), 0.5) for i in range(n)
    ]


class CountingStage(ScoringStage):
    """Scores a candidate with its question's length; records the size of every score_many call."""

    name, weight, batches = "intent_model", 1.0, True

    def __init__(self, fail_on: str | None = None, hold: asyncio.Event | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.hold = hold  # a call waits for it (the test's hand on the stage's timing)

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        return (await self.score_many([question], [candidates]))[0]

    async def score_many(self, questions, candidates):
        self.calls.append(list(questions))
        if self.hold is not None:
            await self.hold.wait()
        if self.fail_on in questions:
            raise RuntimeError(f"cannot score {self.fail_on}")
        for q, cands in zip(questions, candidates, strict=True):
            for c in cands:
                c.stage_scores[self.name] = float(len(q))
        return [StageReport(self.name, error=f"note {q}") for q in questions]


async def test_concurrent_questions_share_one_call_and_keep_their_own_reports():
    stage = CountingStage()
    questions = [f"question {'x' * i}" for i in range(8)]
    cands = [candidates() for _ in questions]
    reports = await asyncio.gather(*(stage.score_request(q, c) for q, c in zip(questions, cands, strict=True)))
    assert stage.calls == [questions]  # one call carried all eight
    assert [r.error for r in reports] == [f"note {q}" for q in questions]
    for q, cs in zip(questions, cands, strict=True):
        assert all(c.stage_scores["intent_model"] == len(q) for c in cs)
    assert stage.coalescing is not None
    assert (stage.coalescing.calls, stage.coalescing.questions, stage.coalescing.largest) == (1, 8, 8)


async def test_a_lone_question_is_scored_at_once_and_later_ones_form_a_new_call():
    stage = CountingStage()
    await stage.score_request("first", candidates())
    await asyncio.gather(stage.score_request("second", candidates()), stage.score_request("third", candidates()))
    assert stage.calls == [["first"], ["second", "third"]]


async def test_a_stage_that_does_not_batch_scores_each_question_on_its_own():
    stage = CountingStage()
    stage.batches = False
    await asyncio.gather(*(stage.score_request(q, candidates()) for q in ("a", "b", "c")))
    assert stage.calls == [["a"], ["b"], ["c"]]
    assert stage.coalescing is None


async def test_a_failure_reaches_every_caller_of_that_call_and_not_the_next():
    stage = CountingStage(fail_on="bad")
    results = await asyncio.gather(
        stage.score_request("good", candidates()), stage.score_request("bad", candidates()), return_exceptions=True
    )
    assert all(isinstance(r, RuntimeError) and "cannot score bad" in str(r) for r in results)
    report = await stage.score_request("fine", candidates())
    assert report.error == "note fine"


async def test_a_caller_that_gives_up_leaves_the_others_their_answers():
    hold = asyncio.Event()
    stage = CountingStage(hold=hold)
    leaving = asyncio.ensure_future(stage.score_request("impatient", candidates()))
    staying = asyncio.ensure_future(stage.score_request("patient", candidates()))
    await eventually(lambda: stage.calls == [["impatient", "patient"]])  # both are in the call now
    leaving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leaving
    hold.set()
    assert (await staying).error == "note patient"
    assert stage.calls == [["impatient", "patient"]]


def test_two_event_loops_never_share_a_batch():
    """One stage used from two threads, each with its own event loop: every loop batches its own calls
    and gets its answers on its own loop (a shared batch would be run, and its futures resolved, on the
    wrong loop). The right loop submits while the left one's batch is still waiting to start."""
    import threading
    import time

    stage = CountingStage()
    left_waiting, right_waiting = threading.Event(), threading.Event()
    out: dict[str, object] = {}

    async def ask(tag: str) -> list[str | None]:
        async def hold() -> None:  # runs right after this loop's four submits, in the same turn
            if tag == "left":
                left_waiting.set()
                right_waiting.wait(5)  # the left loop is stopped before its batch starts
            else:
                right_waiting.set()

        questions = [f"{tag} {i}" for i in range(4)]
        *reports, _ = await asyncio.wait_for(
            asyncio.gather(*(stage.score_request(q, candidates()) for q in questions), hold()), 5
        )
        return [r.error for r in reports]

    def run(tag: str) -> None:
        if tag == "right":
            left_waiting.wait(5)
        try:
            out[tag] = asyncio.run(ask(tag))
        except Exception as exc:  # reported by the assertion below
            out[tag] = exc

    threads = [threading.Thread(target=run, args=(tag,), daemon=True) for tag in ("left", "right")]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 15
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert out == {tag: [f"note {tag} {i}" for i in range(4)] for tag in ("left", "right")}
    assert sorted(map(sorted, stage.calls)) == [[f"left {i}" for i in range(4)], [f"right {i}" for i in range(4)]]
