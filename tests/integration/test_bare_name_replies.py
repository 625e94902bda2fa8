"""A name no list holds, given as the reply to "which city?", is that city (server/conversations/bare_reply.py):
"Glen Ellen", "Check Glen Ellen." and "What about Glen Ellen?" complete the pending request, where before
they were routed on their own and the request was lost. A date, a question of its own words or a reply that
names nothing is not read as the city."""

from __future__ import annotations

import pytest
import pytest_asyncio

from server.conversations.memory_store import MemorySessionStore
from server.conversations.settings import SessionSettings
from server.service import answer as answering
from server.testing.app import running_runtime
from server.testing.configs import WEATHER_TEMPLATE, people_tree

pytestmark = pytest.mark.asyncio(loop_scope="module")

WEATHER_LIBRARY = (
    "\ntemplates:\n"
    + WEATHER_TEMPLATE.lstrip("\n")
    + """  - id: people_in_department
    description: List the people who work in a department
    nl_examples: ["Who works in Engineering?", "Show me the people in Sales", "tell me who is in the HR team"]
    parameters:
      - {name: department, type: string, required: true, allowed_values: [Engineering, Sales, HR]}
    sql: "SELECT name FROM people WHERE department = :department ORDER BY name"
"""
)

ASK = "what will the weather be like on March 4th?"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def people(tmp_path_factory):
    async with running_runtime(people_tree(tmp_path_factory.mktemp("weather"), library=WEATHER_LIBRARY)) as runtime:
        yield runtime.get("people")


async def _reply(people, reply: str) -> dict:
    sessions = MemorySessionStore(SessionSettings())
    asked = await answering.answer_in_session(people, ASK, sessions, None)
    assert asked.body["status"] == "needs_clarification"
    assert [p["name"] for p in asked.body["metadata"]["clarification"]] == ["city"]
    return (await answering.answer_in_session(people, reply, sessions, asked.body["session_id"])).body


@pytest.mark.parametrize(
    ("reply", "city"),
    [
        ("Glen Ellen", "Glen Ellen"),
        ("glen ellen", "glen ellen"),
        ("Check Glen Ellen.", "Glen Ellen"),
        ("Bolinas please.", "Bolinas"),
        ("What about Glen Ellen?", "Glen Ellen"),
        ("The weather in San Rafael, please", "San Rafael"),
    ],
)
async def test_a_bare_name_answers_which_city(people, reply, city):
    body = await _reply(people, reply)
    meta = body["metadata"]
    assert (body["status"], meta["reason"], meta["template_id"]) == ("executed", "clarification_answered", "weather")
    assert meta["parameters"]["city"] == city and meta["parameters"]["day"].endswith("-03-04")
    assert body["rows"] == [{"city": city, "day": meta["parameters"]["day"]}]


@pytest.mark.parametrize(
    "reply",
    [
        "what about Sunday this week?",  # a date: the words of another value are no name
        "Tell me a joke",  # lower-case words in a reply that capitalises
        "can you show me some cool things to do in philly?",  # a question keeps its words: they stand apart
        "make it 6",  # a number is no name
        "Who works in Engineering?",  # a question of its own
        "never mind",
        "Not Boston",
        "forget it",
    ],
)
async def test_what_names_no_city_is_not_the_city(people, reply):
    meta = (await _reply(people, reply))["metadata"]
    assert meta.get("parameters", {}).get("city") is None or meta["template_id"] != "weather"


async def test_a_bare_name_that_also_changes_the_day_is_not_read_as_the_city_alone(people):
    """'Glen Ellen tomorrow' would run the old day with the new city: it is the question of its own it is."""
    meta = (await _reply(people, "Glen Ellen tomorrow"))["metadata"]
    assert not (meta.get("parameters", {}).get("city") == "Glen Ellen" and meta["parameters"]["day"].endswith("-03-04"))


async def test_a_city_of_the_examples_that_routes_to_the_pending_template_answers_it(people):
    """'Paris' alone routes to the weather with confidence (an example's city): it is still the city asked for."""
    body = await _reply(people, "Paris")
    meta = body["metadata"]
    assert (body["status"], meta["template_id"], meta["parameters"]["city"]) == ("executed", "weather", "Paris")
    assert meta["parameters"]["day"].endswith("-03-04")


TRAVEL_LIBRARY = """
templates:
  - id: one_way_flight
    description: Find a one way flight between two cities on a day
    nl_examples:
      - "a flight from [Boston](origin_city) to [Denver](destination_city) on Friday"
      - "I need to fly out of [Austin](origin_city) on March 3rd"
      - "find me a one way flight to [Seattle](destination_city)"
      - "flights from [Miami](origin_city) please"
    parameters:
      - {name: origin_city, type: string, required: true}
      - {name: destination_city, type: string, required: true}
      - {name: day, type: date}
    sql: "SELECT :origin_city AS origin_city, :destination_city AS destination_city, :day AS day"
  - id: rental_car
    description: Find a rental car to pick up in a city
    nl_examples:
      - "[Chicago](pickup_city)"
      - "a rental car in [Nairobi](pickup_city)"
      - "I need a car in [Denver](pickup_city)"
      - "[Boston](pickup_city) please"
    parameters:
      - {name: pickup_city, type: string, required: true}
    sql: "SELECT :pickup_city AS pickup_city"
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def travel(tmp_path_factory):
    tree = people_tree(tmp_path_factory.mktemp("travel"), library=TRAVEL_LIBRARY)
    async with running_runtime(tree) as runtime:
        yield runtime.get("people")


@pytest.mark.parametrize("reply", ["Chicago.", "Nairobi", "Yep, it's Chicago.", "Look in Chicago."])
async def test_a_lone_name_answers_the_city_asked_however_well_it_routes_elsewhere(travel, reply):
    """'Chicago.' alone routes to the car rental with confidence (an example of it), and a reader also takes it
    for the origin said before: the one question waiting is still where the flight goes."""
    sessions = MemorySessionStore(SessionSettings())
    alone = await answering.answer(travel, reply)
    assert alone.body["metadata"]["template_id"] == "rental_car"
    asked = await answering.answer_in_session(travel, "a one way flight from San Diego on March 8th", sessions, None)
    assert [p["name"] for p in asked.body["metadata"]["clarification"]] == ["destination_city"]
    body = (await answering.answer_in_session(travel, reply, sessions, asked.body["session_id"])).body
    meta = body["metadata"]
    assert (meta["template_id"], meta["reason"]) == ("one_way_flight", "clarification_answered")
    city = "Nairobi" if "Nairobi" in reply else "Chicago"
    assert (meta["parameters"]["origin_city"], meta["parameters"]["destination_city"]) == ("San Diego", city)


async def test_a_name_with_words_of_another_request_is_that_request(travel):
    sessions = MemorySessionStore(SessionSettings())
    asked = await answering.answer_in_session(travel, "a one way flight from San Diego on March 8th", sessions, None)
    sid = asked.body["session_id"]
    new = await answering.answer_in_session(travel, "I need a rental car in Chicago", sessions, sid)
    assert new.body["metadata"]["template_id"] == "rental_car"


@pytest.mark.parametrize("reply", ["From Chicago.", "San Diego."])
async def test_a_name_that_says_it_is_the_origin_given_before_is_no_destination(travel, reply):
    """'From Chicago.' speaks of the origin, 'San Diego.' repeats it: neither is where the flight goes."""
    sessions = MemorySessionStore(SessionSettings())
    asked = await answering.answer_in_session(travel, "a one way flight from San Diego on March 8th", sessions, None)
    body = (await answering.answer_in_session(travel, reply, sessions, asked.body["session_id"])).body
    params = body["metadata"].get("parameters") or {}
    assert not (body["status"] == "executed" and params.get("destination_city") in ("Chicago", "San Diego"))


STAY_LIBRARY = """
templates:
  - id: car_days
    description: Extend a car rental by a number of days
    nl_examples:
      - "for [2](rental_days) days only"
      - "[3](rental_days) days please"
      - "extend it by [4](rental_days) days"
    parameters:
      - {name: rental_days, type: integer, required: true, min: 1, max: 30}
    sql: "SELECT :rental_days AS rental_days"
  - id: hotel_stay
    description: Book a hotel room in a city
    nl_examples:
      - "book a hotel in [Paris](city)"
      - "I need a hotel room in [Rome](city)"
      - "reserve a hotel in [Lisbon](city) please"
    parameters:
      - {name: city, type: string, required: true}
      - {name: number_of_days, type: integer, required: true, min: 1, max: 30}
    sql: "SELECT :city AS city, :number_of_days AS number_of_days"
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stays(tmp_path_factory):
    async with running_runtime(people_tree(tmp_path_factory.mktemp("stays"), library=STAY_LIBRARY)) as runtime:
        yield runtime.get("people")


@pytest.mark.parametrize("reply", ["For 2 days only.", "Make it 2 days."])
async def test_a_reply_may_name_what_it_answers(stays, reply):
    """Alone, the reply extends a car rental; to a hotel waiting for its number of days, 'days' names what was
    asked (a word of the parameter's name, which the hotel's examples never say), and the reply answers it."""
    sessions = MemorySessionStore(SessionSettings())
    alone = await answering.answer(stays, reply)
    assert (alone.body["status"], alone.body["metadata"]["template_id"]) == ("executed", "car_days")
    asked = await answering.answer_in_session(stays, "book a hotel in Madrid", sessions, None)
    assert [p["name"] for p in asked.body["metadata"]["clarification"]] == ["number_of_days"]
    body = (await answering.answer_in_session(stays, reply, sessions, asked.body["session_id"])).body
    meta = body["metadata"]
    assert (meta["template_id"], meta["reason"]) == ("hotel_stay", "clarification_answered")
    assert (meta["parameters"]["city"], meta["parameters"]["number_of_days"]) == ("Madrid", 2)
