"""A question of its own on the last answer's template that leaves a required value unsaid runs with the one
the last answer had ("the weather for March 1st" right after the weather in Kenwood is Kenwood's), and a
reply's words that answer what was asked are no other value ("make it the 13th" with the day asked for is
not 13 tickets): server/conversations/follow_up.py."""

from __future__ import annotations

import pytest
import pytest_asyncio

from server.conversations.memory_store import MemorySessionStore
from server.conversations.settings import SessionSettings
from server.service import answer as answering
from server.testing.app import running_runtime
from server.testing.configs import WEATHER_TEMPLATE, people_tree

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIBRARY = (
    "\ntemplates:\n"
    + WEATHER_TEMPLATE.lstrip("\n")
    + """  - id: event_tickets
    description: Buy tickets for an event on a day
    nl_examples:
      - "I want [2](seats) tickets for [Taylor Swift](event) on [March 3rd](day)"
      - "book [four](seats) seats for the [Mariners game](event)"
      - "get me tickets to [Hamilton](event) on [the 5th](day)"
      - "make it [3](seats)"
      - "[2](seats) tickets please"
      - "I need [5](seats) for [Wicked](event)"
    parameters:
      - {name: event, type: string, required: true, description: Name of the event}
      - {name: seats, type: integer, required: true, allowed_values: [1, 2, 3, 4, 5, 6, 7, 8, 9]}
      - {name: day, type: date, required: true}
    sql: "SELECT :event AS event, :seats AS seats, :day AS day"
"""
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def people(tmp_path_factory):
    async with running_runtime(people_tree(tmp_path_factory.mktemp("kept"), library=LIBRARY)) as runtime:
        yield runtime.get("people")


async def _turns(people, *messages: str) -> list[dict]:
    sessions, sid, out = MemorySessionStore(SessionSettings()), None, []
    for message in messages:
        body = (await answering.answer_in_session(people, message, sessions, sid)).body
        sid = body["session_id"]
        out.append(body)
    return out


async def test_the_city_of_the_last_weather_question_is_kept(people):
    first, second = await _turns(
        people, "what's the weather in Kenwood on March 5th?", "can you tell me the weather for March 1st?"
    )
    assert first["metadata"]["parameters"]["city"] == "Kenwood"
    meta = second["metadata"]
    assert (meta["status"], meta["template_id"], meta["reason"]) == ("executed", "weather", "follow_up")
    assert meta["parameters"]["city"] == "Kenwood" and meta["parameters"]["day"].endswith("-03-01")
    assert meta["session"]["carried"] == ["city"]


async def test_an_optional_value_said_before_is_not_kept(people):
    """A new question states its own constraints: the day of the last question is not the new one's."""
    _, second = await _turns(people, "what's the weather in Kenwood on March 5th?", "what's the weather in Boston?")
    meta = second["metadata"]
    assert (meta["status"], meta["parameters"]["city"], meta["parameters"]["day"]) == ("executed", "Boston", None)
    assert meta["reason"] != "follow_up"


@pytest.mark.parametrize("reply", ["make it the 13th", "Make it for the 13th of this month.", "the 13th please"])
async def test_a_day_answering_what_was_asked_is_no_count(people, reply):
    asked, answered = await _turns(people, "I'd like four tickets for Jojo Siwa", reply)
    assert asked["metadata"]["status"] == "needs_clarification"
    assert [p["name"] for p in asked["metadata"]["clarification"]] == ["day"]
    meta = answered["metadata"]
    assert meta["status"] == "executed", meta.get("clarification")
    assert (meta["parameters"]["seats"], meta["parameters"]["day"][-2:]) == (4, "13")
