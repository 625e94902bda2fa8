"""A reply to a clarification may use the pending request's own words around its values: "I need 4 tickets
for March 11th" while a bus ticket waits for the travellers and the date is that request's answer, even
where the message alone would route to event tickets. A word the pending request never uses ("concert")
makes it the new question it looks like."""

from __future__ import annotations

import pytest

from server.conversations.memory_store import MemorySessionStore
from server.conversations.settings import SessionSettings
from server.service import answer as answering
from server.testing.app import running_runtime
from server.testing.configs import people_tree

pytestmark = pytest.mark.asyncio

TICKETS_LIBRARY = """
templates:
  - id: bus_tickets
    description: Buy bus tickets to a city for a number of travellers on a date
    nl_examples:
      - "Buy 2 bus tickets to Fresno on March 3rd"
      - "I want bus tickets to Portland for 3 people"
      - "book a bus to Vegas for two travellers tomorrow"
      - "I need tickets for the bus to Fresno"
    parameters:
      - {name: to_city, type: string, required: true, allowed_values: [Fresno, Portland, Vegas]}
      - {name: travelers, type: integer, required: true, min: 1, max: 9}
      - {name: date, type: date, required: true}
    sql: "SELECT :to_city AS to_city, :travelers AS travelers, :date AS date"
  - id: event_tickets
    description: Buy tickets for a concert, a show or a game on a date
    nl_examples:
      - "two seats for the concert on Saturday"
      - "get me two tickets to the game tomorrow"
      - "buy 3 tickets for the show on Friday"
      - "tickets for the jazz concert next week"
    parameters:
      - {name: seats, type: integer, required: true, min: 1, max: 9}
      - {name: date, type: date, required: true}
    sql: "SELECT :seats AS seats, :date AS date"
"""


async def _two_turns(tmp_path, first: str, second: str) -> tuple[dict, dict]:
    sessions = MemorySessionStore(SessionSettings())
    async with running_runtime(people_tree(tmp_path, library=TICKETS_LIBRARY)) as runtime:
        people = runtime.get("people")
        asked = await answering.answer_in_session(people, first, sessions, None)
        replied = await answering.answer_in_session(people, second, sessions, asked.body["session_id"])
        alone = await answering.answer(people, second)
    assert alone.body["metadata"]["template_id"] == "event_tickets"  # the reply alone is an event's tickets
    return asked.body, replied.body


def _answered_the_bus(meta: dict, travelers: int) -> None:
    assert (meta["reason"], meta["template_id"], meta["parameters"]["travelers"]) == (
        "clarification_answered",
        "bus_tickets",
        travelers,
    )


async def test_a_reply_in_the_pending_requests_own_words_answers_it(tmp_path):
    asked, replied = await _two_turns(tmp_path, "I want bus tickets to Fresno", "I need 4 tickets for March 11th")
    assert asked["status"] == "needs_clarification"
    assert {p["name"] for p in asked["metadata"]["clarification"]} == {"travelers", "date"}
    meta = replied["metadata"]
    assert (replied["status"], meta["reason"], meta["template_id"]) == (
        "executed",
        "clarification_answered",
        "bus_tickets",
    )
    assert meta["parameters"]["to_city"] == "Fresno" and meta["parameters"]["travelers"] == 4
    assert meta["parameters"]["date"].endswith("-03-11")


async def test_a_word_the_pending_request_never_uses_starts_the_new_question(tmp_path):
    _, replied = await _two_turns(
        tmp_path, "I want bus tickets to Fresno", "I need 4 tickets for the concert on March 11th"
    )
    meta = replied["metadata"]
    assert meta["template_id"] == "event_tickets" and meta["reason"] != "clarification_answered"
    assert meta["parameters"]["seats"] == 4


async def test_a_reply_that_opens_with_a_contraction_answers_like_any_other(tmp_path):
    """ "I'll" counts as the "I" it shortens (server/conversations/bare_reply.py `reply_words`): filler."""
    _, replied = await _two_turns(tmp_path, "I want bus tickets to Fresno", "I'll need 4 tickets for March 11th")
    meta = replied["metadata"]
    _answered_the_bus(meta, 4)


EVENTS_LIBRARY = """
templates:
  - id: find_events
    description: Find events of a category happening in a city
    nl_examples:
      - "find me some [music](category) events in [Portland](city)"
      - "can you find interesting [sports](category) events around [Fresno](city)?"
      - "what [music](category) events are on in [Vegas](city)"
      - "I'm looking for events in [Portland](city)"
    parameters:
      - {name: city, type: string, required: true, allowed_values: [Fresno, Portland, Vegas]}
      - {name: category, type: string, required: true, allowed_values: [music, sports]}
    sql: "SELECT :city AS city, :category AS category"
  - id: event_tickets
    description: Buy tickets for a named event in a city on a date
    nl_examples:
      - "please buy a ticket for me"
      - "can you find me tickets for [Hamilton](event_name) in [Portland](city) on [Friday](date)"
      - "I want tickets for an interesting event around [Vegas](city)"
      - "get me seats for [Hamilton](event_name) on [Saturday](date)"
    parameters:
      - {name: event_name, type: string, required: true}
      - {name: city, type: string, required: true, allowed_values: [Fresno, Portland, Vegas]}
      - {name: date, type: date, required: true}
    sql: "SELECT :event_name AS event_name, :city AS city, :date AS date"
"""


@pytest.mark.parametrize(
    ("reply", "template", "reason"),
    [
        ("I'm looking in Portland", "event_tickets", "clarification_answered"),
        # four words of the pending request's own besides the city: a search of its own (_VALUE_WORDS)
        ("Can you find me some interesting events around Portland?", "find_events", "highest_score_above_threshold"),
    ],
)
async def test_a_reply_routing_elsewhere_answers_only_in_a_few_of_the_pending_requests_words(
    tmp_path, reply, template, reason
):
    sessions = MemorySessionStore(SessionSettings())
    async with running_runtime(people_tree(tmp_path, library=EVENTS_LIBRARY)) as runtime:
        people = runtime.get("people")
        alone = await answering.answer(people, reply)
        asked = await answering.answer_in_session(people, "please buy a ticket for me", sessions, None)
        replied = await answering.answer_in_session(people, reply, sessions, asked.body["session_id"])
    assert alone.body["metadata"]["template_id"] == "find_events"
    meta = replied.body["metadata"]
    assert (meta["template_id"], meta["reason"], meta["parameters"]["city"]) == (template, reason, "Portland")


RESTAURANTS_LIBRARY = """
templates:
  - id: restaurants
    description: Find restaurants in a city serving a cuisine
    nl_examples:
      - "find me a restaurant in [Oakland](location)"
      - "I want [Thai](cuisine) food in [Berkeley](location)"
      - "a place serving [Mexican](cuisine) food in [San Jose](location)"
      - "some [Italian](cuisine) restaurants in [Palo Alto](location) please"
      - "[Greek](cuisine) food near [Fremont](location)"
    parameters:
      - {name: location, type: string, required: true}
      - {name: cuisine, type: string, required: false}
    sql: "SELECT :location AS location, :cuisine AS cuisine"
"""


@pytest.mark.parametrize(
    "reply", ["I would love some Korean food tonight", "Something serving Korean food would be lovely"]
)
async def test_a_reply_gives_a_value_to_the_parameter_its_words_name_not_to_the_one_asked(tmp_path, reply):
    """While the city is asked, 'some Korean food' is the cuisine: the reply read against the whole template
    gives those words to it, so the city stays asked (server/conversations/follow_up.py `_meant_for_asked`)."""
    body = await _asked_then(tmp_path, RESTAURANTS_LIBRARY, "I want to find a restaurant", reply, ["location"])
    meta = body["metadata"]
    assert meta["parameters"]["cuisine"] == "Korean" and meta["parameters"].get("location") is None
    assert [p["name"] for p in meta["clarification"]] == ["location"]


PROVIDERS_LIBRARY = """
templates:
  - id: providers
    description: Find a doctor of a kind in a city
    nl_examples:
      - "find a [dentist](kind) in [fremont](city)"
      - "I need a [psychologist](kind) in [san jose](city)"
      - "a [dentist](kind) near [Oakland](city) please"
      - "I want to see a [psychologist](kind) in [berkeley](city)"
      - "any [dentist](kind) around [palo alto](city)?"
      - "can you find me a [dentist](kind) in [mountain view](city)"
      - "can you find me a [psychologist](kind) at [los gatos](city)?"
      - "[dentist](kind) for [santa clara](city)"
      - "I need a [dentist](kind) for [walnut creek](city)"
    parameters:
      - {name: kind, type: string, required: true, allowed_values: [dentist, psychologist]}
      - {name: city, type: string, required: true}
    sql: "SELECT :kind AS kind, :city AS city"
  - id: reserve_table
    description: Reserve a table at a restaurant
    nl_examples:
      - "make me a restaurant reservation at [Nopa](restaurant)"
      - "book a table at [Zuni Cafe](restaurant) for dinner"
      - "I need a reservation at [Delfina](restaurant)"
      - "can you reserve a table at [Nopa](restaurant)?"
    parameters:
      - {name: restaurant, type: string, required: true}
    sql: "SELECT :restaurant AS restaurant"
"""


@pytest.mark.parametrize(
    ("reply", "template", "city"),
    [
        ("Can you find me a restaurant reservation?", "reserve_table", None),
        ("in fremont please", "providers", "fremont"),  # a name in lower case still answers
    ],
)
async def test_the_words_templates_use_around_values_answer_no_asked_name(tmp_path, reply, template, city):
    """Found on SGD's control pairs: while a psychologist waits for its city, the learned model, asked for the
    city alone, read 'restaurant reservation' as one (server/conversations/follow_up.py `_worded`)."""
    body = await _asked_then(tmp_path, PROVIDERS_LIBRARY, "I want to see a psychologist", reply, ["city"])
    meta = body["metadata"]
    assert (meta["template_id"], meta["parameters"].get("city")) == (template, city)


BUS_OR_SHOW_LIBRARY = """
templates:
  - id: bus_tickets
    description: Buy bus tickets from one city to another for a number of travellers on a date
    nl_examples:
      - "I need [2](travelers) bus tickets to [Sacramento](to_city) on [March 3rd](date)"
      - "book a bus from [Fresno](from_city) to [Los Angeles](to_city) for [3](travelers) people"
      - "can you get me a bus ticket to [San Diego](to_city) leaving [tomorrow](date)"
      - "I'd like to take the bus to [Phoenix](to_city)"
      - "reserve [four](travelers) seats on the bus to [Seattle](to_city) for [next Friday](date)"
    parameters:
      - name: to_city
        type: string
        required: true
        allowed_values: [Fresno, Sacramento, Los Angeles, San Diego, Phoenix, Seattle, Las Vegas]
      - name: from_city
        type: string
        allowed_values: [Fresno, Sacramento, Los Angeles, San Diego, Phoenix, Seattle, Las Vegas]
      - {name: travelers, type: integer, required: true, min: 1, max: 9}
      - {name: date, type: date, required: true}
    sql: "SELECT :to_city AS to_city, :from_city AS from_city, :travelers AS travelers, :date AS date"
  - id: event_tickets
    description: Buy tickets for a concert, a game or a show on a date
    nl_examples:
      - "get me [two](seats) tickets for the [Lakers](event_name) game on [Saturday](date)"
      - "I want to buy tickets to see [Hamilton](event_name)"
      - "[3](seats) seats for the [Coldplay](event_name) concert please"
      - "book tickets for the show on [Friday](date)"
    parameters:
      - {name: event_name, type: string, required: true}
      - {name: seats, type: integer, required: true, min: 1, max: 9}
      - {name: date, type: date, required: true}
    sql: "SELECT :event_name AS event_name, :seats AS seats, :date AS date"
"""


@pytest.mark.parametrize(
    ("reply", "travelers"),
    [
        ("We'll need three seats for the 22nd", 3),
        ("Can you get me tickets for two people for next Friday please", 2),  # 'get' wraps a value as 'want' does
    ],
)
async def test_found_by_review_replies_in_the_bus_tickets_words_answer_it(tmp_path, reply, travelers):
    body = await _asked_then(
        tmp_path, BUS_OR_SHOW_LIBRARY, "I want to take a bus to Las Vegas", reply, ["travelers", "date"]
    )
    _answered_the_bus(body["metadata"], travelers)


async def test_a_reply_that_would_itself_be_asked_for_a_value_elsewhere_answers_the_pending_request(tmp_path):
    """'buy 4 tickets' alone is an event's tickets that would ask for the date; while a bus ticket waits for
    its travellers, it gives them (server/conversations/follow_up.py `_asks_back`), though it scores the bus
    ticket far behind (a margin of 0.05: not close behind)."""
    sessions = MemorySessionStore(SessionSettings(new_question_margin=0.05))
    async with running_runtime(people_tree(tmp_path, library=TICKETS_LIBRARY)) as runtime:
        people = runtime.get("people")
        alone = await answering.answer(people, "buy 4 tickets")
        asked = await answering.answer_in_session(people, "I want bus tickets to Fresno on March 11th", sessions, None)
        replied = await answering.answer_in_session(people, "buy 4 tickets", sessions, asked.body["session_id"])
    assert alone.body["metadata"]["template_id"] == "event_tickets" and alone.body["status"] == "needs_clarification"
    assert [p["name"] for p in asked.body["metadata"]["clarification"]] == ["travelers"]
    meta = replied.body["metadata"]
    _answered_the_bus(meta, 4)


RENTAL_LIBRARY = """
templates:
  - id: rent_a_car
    description: Rent a car in a city from a pickup date to a dropoff date
    nl_examples:
      - "rent a car in [Fresno](city) from [March 3rd](pickup_date) to [March 6th](dropoff_date)"
      - "I need a rental car in [Portland](city) until [Friday](dropoff_date)"
      - "a car from [tomorrow](pickup_date) please"
    parameters:
      - {name: city, type: string, required: true, allowed_values: [Fresno, Portland, Vegas]}
      - {name: pickup_date, type: date, required: true}
      - {name: dropoff_date, type: date, required: true}
    sql: "SELECT :city AS city, :pickup_date AS pickup_date, :dropoff_date AS dropoff_date"
"""


async def _asked_then(tmp_path, library: str, first: str, reply: str, asked_for: list[str]) -> dict:
    """The answer to `reply`, in a session whose first question asked for `asked_for`."""
    sessions = MemorySessionStore(SessionSettings())
    async with running_runtime(people_tree(tmp_path, library=library)) as runtime:
        people = runtime.get("people")
        asked = await answering.answer_in_session(people, first, sessions, None)
        assert [p["name"] for p in asked.body["metadata"]["clarification"]] == asked_for
        return (await answering.answer_in_session(people, reply, sessions, asked.body["session_id"])).body


@pytest.mark.parametrize(
    ("reply", "travelers"),
    [
        ("no, just 2", 2),
        ("Actually it will be for 2 people", 2),
        ("make that 4", 4),
        ("not 2 but 4", 4),  # the value after the cue, not the one it denies
        ("no, not 2, 3", 3),
    ],
)
async def test_a_reply_may_correct_a_value_given_before_while_the_rest_is_asked(tmp_path, reply, travelers):
    """While the date is asked for, 'no, just 2' replaces the 3 travellers said before, and the date is asked
    for again."""
    body = await _asked_then(tmp_path, TICKETS_LIBRARY, "3 bus tickets to Fresno", reply, ["date"])
    meta = body["metadata"]
    assert (body["status"], meta["template_id"]) == ("needs_clarification", "bus_tickets")
    assert meta["parameters"]["travelers"] == travelers and meta["parameters"]["to_city"] == "Fresno"
    assert [p["name"] for p in meta["clarification"]] == ["date"]


@pytest.mark.parametrize("reply", ["no, not 2", "Actually, I don't need 2", "Sorry, I have 2 questions"])
async def test_a_denial_or_a_remark_with_a_number_corrects_nothing(tmp_path, reply):
    """A denial gives no value, and a number among other words is no correction: the 3 travellers stay
    (the message may be read as a question of its own, but never as 2 travellers to Fresno)."""
    meta = (await _asked_then(tmp_path, TICKETS_LIBRARY, "3 bus tickets to Fresno", reply, ["date"]))["metadata"]
    assert meta.get("template_id") != "bus_tickets" or meta["parameters"]["travelers"] == 3


async def test_the_words_that_answer_what_was_asked_correct_nothing_else(tmp_path):
    """'No, I need it from March 8th' gives the pickup date asked for; the dropoff date said before stays."""
    first, reply = "rent a car in Fresno until March 13th", "No, I need it from March 8th"
    body = await _asked_then(tmp_path, RENTAL_LIBRARY, first, reply, ["pickup_date"])
    meta = body["metadata"]
    assert body["status"] == "executed" and meta["reason"] == "clarification_answered"
    values = meta["parameters"]
    assert values["pickup_date"].endswith("-03-08") and values["dropoff_date"].endswith("-03-13")


async def test_a_corrected_value_that_does_not_pass_is_asked_about(tmp_path):
    body = await _asked_then(
        tmp_path, TICKETS_LIBRARY, "3 bus tickets to Fresno", "no, 12 people on March 5th", ["date"]
    )
    meta = body["metadata"]
    assert (body["status"], meta["template_id"]) == ("needs_clarification", "bus_tickets")
    asked_about = {p["name"]: p for p in meta["clarification"]}
    assert list(asked_about) == ["travelers"] and asked_about["travelers"]["problem"] == "invalid"
    assert meta["parameters"]["date"].endswith("-03-05")


async def test_beside_the_answer_a_value_said_anew_replaces_the_earlier_one(tmp_path):
    """'March 5th for 2 people' answers the date asked for and says 2 travellers where 3 were said: the
    answer runs for 2."""
    body = await _asked_then(tmp_path, TICKETS_LIBRARY, "3 bus tickets to Fresno", "March 5th for 2 people", ["date"])
    meta = body["metadata"]
    assert (body["status"], meta["reason"]) == ("executed", "clarification_answered")
    assert meta["parameters"]["travelers"] == 2 and meta["parameters"]["date"].endswith("-03-05")


async def test_a_bare_number_beside_the_answer_does_not_replace_the_value_said_before(tmp_path):
    """'leave at 2' is no number of travellers: only a sure reading replaces the 3 said before."""
    first, reply = "3 bus tickets to Fresno", "March 5th, and I want to leave at 2"
    meta = (await _asked_then(tmp_path, TICKETS_LIBRARY, first, reply, ["date"]))["metadata"]
    assert meta["parameters"]["travelers"] == 3 and meta["parameters"]["date"].endswith("-03-05")


ORDERS_LIBRARY = """
templates:
  - id: top_orders
    description: The largest orders placed between two dates
    nl_examples:
      - "top 5 orders between 2024-01-01 and 2024-02-01"
      - "the 10 largest orders from March 1st to April 1st"
    parameters:
      - {name: limit, type: integer, default: 100, min: 1, max: 500}
      - {name: start_date, type: date, required: true}
      - {name: end_date, type: date, required: true}
    sql: "SELECT :limit AS n, :start_date AS s, :end_date AS e"
"""


@pytest.mark.parametrize(("reply", "limit"), [("make that 3", 3), ("not 5 but 10", 10), ("actually I only need 4", 4)])
async def test_a_bare_number_corrects_the_one_number_given_before(tmp_path, reply, limit):
    """The number reader gives a row limit only after 'top': a correction that is a bare number replaces the
    one number found before, and the dates are asked for again."""
    first = "top 5 orders between two dates"
    body = await _asked_then(tmp_path, ORDERS_LIBRARY, first, reply, ["start_date", "end_date"])
    meta = body["metadata"]
    assert (body["status"], meta["template_id"], meta["parameters"]["limit"]) == (
        "needs_clarification",
        "top_orders",
        limit,
    )
