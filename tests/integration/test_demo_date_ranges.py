"""Date ranges as people break them on the demo: two full dates the wrong way round are the range between
them (not the first day alone), and a message that breaks off after "between March 1st 2025 and" asks for
the end instead of running a one-day range, which the next message of the session then gives."""

from __future__ import annotations

import pytest

from server.service import answer as answering
from server.service.answer import answer_in_session


async def test_two_dates_the_wrong_way_round_are_the_range_between_them(demo_runtime):
    result = await answering.answer(demo_runtime.get("company"), "Show orders placed between 2024-01-31 and 2024-01-01")
    meta = result.body["metadata"]
    assert meta["template_id"] == "orders_between_dates" and result.body["status"] == "executed"
    assert (meta["parameters"]["start_date"], meta["parameters"]["end_date"]) == ("2024-01-01", "2024-01-31")


async def test_a_range_that_breaks_off_asks_for_its_end_and_the_next_message_gives_it(demo_runtime):
    company, sessions = demo_runtime.get("company"), demo_runtime.sessions
    first = await answer_in_session(company, "list orders placed between march 1st 2025 and", sessions, None)
    assert first.body["status"] == "needs_clarification", first.body["content"]
    assert [c["name"] for c in first.body["metadata"]["clarification"]] == ["end_date"]
    second = await answer_in_session(company, "march fifth", sessions, first.body["session_id"])
    meta = second.body["metadata"]
    assert second.body["status"] == "executed" and meta["template_id"] == "orders_between_dates"
    assert (meta["parameters"]["start_date"], meta["parameters"]["end_date"]) == ("2025-03-01", "2025-03-05")


@pytest.mark.parametrize(
    ("question", "invalid"),
    [
        (
            "how many employees were hired between 2024-06-31 and 2024-09-31?",
            {"start_date": "2024-06-31", "end_date": "2024-09-31"},
        ),
        ("how many employees were hired after February 30 2024", {"start_date": "February 30 2024"}),
        ("how many employees were hired no later than 2024-02-30", {"end_date": "2024-02-30"}),
    ],
)
async def test_a_date_that_is_none_is_asked_about_not_read_as_all_time(demo_runtime, question, invalid):
    """Found by a robustness probe: an impossible date was dropped and the range's defaults answered for all
    time ('hires: 300'); it is a value given that does not work (server/params/dates.py `read_dates`)."""
    body = (await answer_in_session(demo_runtime.get("company"), question, demo_runtime.sessions, None)).body
    assert body["status"] == "needs_clarification"
    given = {p["name"]: p.get("given") for p in body["metadata"]["clarification"] if p["problem"] == "invalid"}
    assert given == invalid
