"""The extractor end to end on everyday phrasing (the kind public slot-filling sets are made of): party sizes
and seats in words, numeric allowed values, time parameters, spoken dates, decades, date and time together."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.extractor import TemplateParameterExtractor, validate
from server.params.settings import ParameterExtractionSettings
from server.templates import ParameterSpec
from server.testing.templates import template

TODAY = dt.date(2025, 12, 31)  # a Wednesday


async def extract(question: str, *params: dict):
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: TODAY)
    return await extractor.extract(question, template(*params))


PARTY = {"name": "party_size", "type": "integer", "description": "Party size for a reservation"}
TIME = {"name": "time", "type": "time", "description": "Time of the reservation"}
SEATS_1_10 = {"name": "number_of_seats", "type": "integer", "allowed_values": list(range(1, 11))}
SEATS_AS_TEXT = {"name": "number_of_seats", "type": "string", "allowed_values": [str(i) for i in range(1, 11)]}


# --- counts ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "question, size",
    [
        ("a party of seven please", 7),
        ("a table for five at an italian place", 5),
        ("book it for 3 people", 3),
        ("dinner for two tomorrow", 2),
        ("we are a dozen people", 12),
    ],
)
async def test_a_party_size_fills_an_optional_parameter(question, size):
    got = await extract(question, PARTY)
    assert got.values == {"party_size": size} and got.ok
    assert got.trace[0].score >= 0.85


async def test_only_a_count_of_people_fills_an_optional_party_size():
    assert (await extract("a table for 2, on 5th avenue", PARTY)).values == {"party_size": 2}
    assert (await extract("the place on 5th avenue, 2 blocks away", PARTY)).values == {"party_size": None}


@pytest.mark.parametrize("spec", [SEATS_1_10, SEATS_AS_TEXT])
@pytest.mark.parametrize("question", ["tickets for five people", "I need four seats", "we are 4, at 7 pm"])
async def test_numeric_allowed_values_are_filled_from_words(spec, question):
    spec = {**spec, "required": True}
    got = await extract(question, spec)
    want = 5 if "five" in question else 4
    assert got.ok and got.values == {"number_of_seats": want if spec["type"] == "integer" else str(want)}


async def test_a_count_of_something_else_does_not_fill_a_quantity():
    got = await extract("two rooms for 3 people", {"name": "number_of_rooms", "type": "integer"}, PARTY)
    assert got.values == {"number_of_rooms": 2, "party_size": 3}


async def test_a_numeric_choice_out_of_range_is_reported_not_replaced():
    got = await extract("a table for twelve people", {**SEATS_1_10, "required": True})
    assert [p.problem for p in got.problems] == ["invalid"] and got.problems[0].given == "twelve"


# --- times ------------------------------------------------------------------------------------------------
START_TIME = {"name": "start_time", "type": "time"}
END_TIME = {"name": "end_time", "type": "time"}


@pytest.mark.parametrize(
    "question, start, end",
    [
        ("trains after 3 pm", "15:00", None),
        ("anything before noon", None, "12:00"),
        ("meetings between 5 and 7 pm", "17:00", "19:00"),
        ("free slots in the morning", "06:00", "12:00"),
        ("rooms from 9:30 to 11 pm", "21:30", "23:00"),
    ],
)
async def test_time_ranges_fill_start_and_end_times(question, start, end):
    got = await extract(question, START_TIME, END_TIME)
    assert got.values == {"start_time": start, "end_time": end} and got.ok


async def test_after_fills_a_start_time_even_when_it_is_the_only_one():
    got = await extract("buses leaving after 3 pm", {"name": "earliest_departure", "type": "time"})
    assert got.values == {"earliest_departure": "15:00"}


async def test_a_point_time_takes_a_clock_time_and_never_a_range():
    got = await extract("a table for 2 at half past 7 in the evening", {**TIME, "required": True}, PARTY)
    assert got.values == {"time": "19:30", "party_size": 2}
    vague = await extract("a table in the morning", {**TIME, "required": True})
    assert [p.problem for p in vague.problems] == ["missing"]


async def test_a_time_takes_its_digits_and_its_am_pm():
    got = await extract(
        "a table at 7 pm",
        {**PARTY, "required": True},
        {"name": "shift", "type": "string", "allowed_values": ["AM", "PM"]},
    )
    assert got.values["shift"] is None  # 'pm' belongs to the time
    assert [p.name for p in got.problems] == ["party_size"]  # and the 7 is no party size
    named = await extract("who works the PM shift", {"name": "shift", "type": "string", "allowed_values": ["AM", "PM"]})
    assert named.values == {"shift": "PM"}


async def test_a_time_parameter_explains_what_it_wants():
    got = await extract("book it please", {**TIME, "required": True})
    assert "time of day" in got.problems[0].message and got.problems[0].type == "time"
    spec = ParameterSpec(name="time", type="time")
    assert validate(spec, "7:45 pm") == "19:45"


# --- dates, decades, date and time together ---------------------------------------------------------------
async def test_a_weekday_before_a_spoken_date_gives_the_date():
    got = await extract("reserve on wednesday april sixth", {"name": "date", "type": "date", "required": True})
    assert got.values == {"date": "2025-04-06"}
    assert got.trace[0].text == "wednesday april sixth"


async def test_a_decade_fills_start_and_end_years_and_not_a_single_year():
    start_end = await extract(
        "play me a song from the fifties",
        {"name": "start_year", "type": "integer"},
        {"name": "end_year", "type": "integer"},
    )
    assert start_end.values == {"start_year": 1950, "end_year": 1959}
    single = await extract("play me a song from the fifties", {"name": "year", "type": "integer", "required": True})
    assert [p.problem for p in single.problems] == ["missing"]  # which of ten years is the user's to say


async def test_a_decade_fills_a_date_range():
    got = await extract(
        "hits of the 80s", {"name": "released_after", "type": "date"}, {"name": "released_before", "type": "date"}
    )
    assert got.values == {"released_after": "1980-01-01", "released_before": "1989-12-31"}


async def test_a_datetime_takes_the_time_said_with_its_date():
    got = await extract("schedule it friday at 3pm", {"name": "when", "type": "datetime", "required": True})
    assert got.values == {"when": "2026-01-02T15:00:00"}
    assert got.trace[0].text == "friday at 3pm"


async def test_one_expression_may_fill_a_date_and_a_time():
    got = await extract("something tonight at 8", {"name": "date", "type": "date"}, TIME)
    assert got.values == {"date": "2025-12-31", "time": "20:00"}
