"""Times of day in questions (clock times, parts of the day, after/before/between), the spelled-number view the
readers share, and the `time` parameter type's coercion."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.params.coercion import InvalidValue, coerce
from server.params.extractor import TemplateParameterExtractor
from server.params.spelled import digitised, spelled_numbers
from server.params.times import PERIODS, clock_value, find_times
from server.templates import ParameterSpec
from server.testing.templates import template

_HOURS = ["twelve", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"]


def only(text: str):
    found = find_times(text)
    assert len(found) == 1, found
    return found[0]


def hm(value: dt.time | None) -> str | None:
    return value.strftime("%H:%M") if value is not None else None


@given(st.integers(min_value=0, max_value=23), st.integers(min_value=0, max_value=59))
def test_a_clock_time_written_several_ways_comes_back_exactly(hour, minute):
    twelve = hour % 12 or 12
    suffix = "pm" if hour >= 12 else "am"
    for said in (f"{hour:02d}:{minute:02d}", f"{twelve}:{minute:02d} {suffix}", f"{twelve}:{minute:02d}{suffix}"):
        m = only(f"is anything free at {said} please")
        assert (m.start, m.end, m.operator, m.point) == (dt.time(hour, minute), dt.time(hour, minute), None, True)


@given(st.integers(min_value=1, max_value=12), st.sampled_from(["am", "pm", "in the morning", "in the evening"]))
def test_an_hour_in_words_with_am_pm_or_a_part_of_the_day(hour, said):
    pm = said in ("pm", "in the evening")
    m = only(f"a table at {_HOURS[hour % 12]} {said}")
    assert m.start == dt.time(hour % 12 + (12 if pm else 0))


@pytest.mark.parametrize(
    "text, start, end, operator, said",
    [
        ("3 pm", "15:00", "15:00", None, "3 pm"),
        ("3:30pm", "15:30", "15:30", None, "3:30pm"),
        ("at 3 p.m. please", "15:00", "15:00", None, "3 p.m."),
        ("at 12:30 pm.", "12:30", "12:30", None, "12:30 pm"),
        ("15:00", "15:00", "15:00", None, "15:00"),
        ("noon", "12:00", "12:00", None, "noon"),
        ("midnight", "00:00", "00:00", None, "midnight"),
        ("half past five", "05:30", "05:30", None, "half past five"),  # no am/pm: as written, 24-hour
        ("half past 11 in the morning", "11:30", "11:30", None, "half past 11 in the morning"),
        ("quarter to 7 pm", "18:45", "18:45", None, "quarter to 7 pm"),
        ("20 past 6 in the evening", "18:20", "18:20", None, "20 past 6 in the evening"),
        ("afternoon 12:30", "12:30", "12:30", None, "afternoon 12:30"),
        ("morning 11:15", "11:15", "11:15", None, "morning 11:15"),
        ("pick me up around afternoon 2 till the 5th", "14:00", "14:00", None, "afternoon 2"),
        ("7 in the evening", "19:00", "19:00", None, "7 in the evening"),
        ("seven thirty pm", "19:30", "19:30", None, "seven thirty pm"),
        ("one pm", "13:00", "13:00", None, "one pm"),
        ('5 o"clock in the evening', "17:00", "17:00", None, '5 o"clock in the evening'),
        ("tonight at 8", "20:00", "20:00", None, "tonight at 8"),
        ("after 3 pm", "15:00", None, "after", "after 3 pm"),
        ("3 pm onwards", "15:00", None, "after", "3 pm onwards"),
        ("before noon", None, "12:00", "before", "before noon"),
        ("by 5 p.m.", None, "17:00", "before", "by 5 p.m."),
        ("before midnight", None, "23:59", "before", "before midnight"),
        ("between 5 and 7 pm", "17:00", "19:00", "between", "between 5 and 7 pm"),
        ("between 11 and 2 pm", "11:00", "14:00", "between", "between 11 and 2 pm"),
        ("from 9:30 to 11 pm", "21:30", "23:00", "between", "from 9:30 to 11 pm"),
        ("from 10:00 to 14:00", "10:00", "14:00", "between", "from 10:00 to 14:00"),
        ("5-7pm", "17:00", "19:00", "between", "5-7pm"),
        ("in the morning", "06:00", "12:00", None, "in the morning"),
        ("in the evening", "17:00", "21:00", None, "in the evening"),
        ("tomorrow morning", "06:00", "12:00", None, "morning"),
        ("friday night", "21:00", "23:59", None, "night"),
        ("tonight", "17:00", "23:59", None, "tonight"),
    ],
)
def test_times_as_people_say_them(text, start, end, operator, said):
    m = only(text)
    assert (hm(m.start), hm(m.end), m.operator, m.text) == (start, end, operator, said)


@pytest.mark.parametrize(
    "text, said, start",
    [
        ("a dinner reservation at quarter past eight", "quarter past eight", "20:15"),  # was 08:15
        ("book a table at half past 7 for dinner", "half past 7", "19:30"),
        ("dinner at 8", "8", "20:00"),  # a bare hour after 'at', in the evening
        ("tonight at 7:30", "tonight at 7:30", "19:30"),
        ("dinner at 8:30 am", "8:30 am", "08:30"),  # said: kept
        ("breakfast at 8:30 then dinner", "8:30", "08:30"),  # the morning is spoken of too: as written
        ("wake me at 6:30", "6:30", "06:30"),  # nothing of the evening: as written
    ],
)
def test_a_clock_time_without_am_or_pm_in_a_question_about_the_evening(text, said, start):
    m = only(text)
    assert (m.text, hm(m.start)) == (said, start)


@pytest.mark.parametrize(
    "text, found",
    [
        ("lunch at 11:30 for 2 and maybe dinner later", ["11:30"]),  # lunch keeps its hours
        ("book a room for one night, check-in at 11", []),  # a night at a hotel is no evening
        ("book dinner for about 6", []),  # a party of six, not 18:00
        ("dinner at 8 tomorrow", ["20:00"]),  # words may follow the hour
        ("dinner at 8 people", []),
        ("dinner around 8", ["20:00"]),
        ("lunch at 1 for two", ["13:00"]),  # found by a second QA pass: asked for the time
        ("lunch at 11", ["11:00"]),
        ("breakfast at 9", ["09:00"]),
        ("good morning, a table at 8 please", []),  # a greeting is no meal
        ("a dinner table for around 8", []),  # a party of about eight
    ],
)
def test_the_evening_rule_only_where_it_is_meant(text, found):
    """Found by a review: lunch at 11:30 was 23:30, 'check-in at 11' on a one-night stay 23:00."""
    assert [hm(t.start) for t in find_times(text)] == found


def test_a_part_of_the_day_is_a_range_not_a_clock_time():
    m = only("anything free in the morning?")
    assert not m.clock and not m.point and m.period == "morning"
    assert (m.start, m.end) == PERIODS["morning"]


@pytest.mark.parametrize(
    "text",
    [
        "a table at 7",  # am or pm is not said: asked, never guessed
        "between 5 and 7 people",
        "good morning, two tickets please",
        "a movie night",
        "the album Night Visions",
        "I am 5",
        "a 4:1 ratio",
    ],
)
def test_words_that_look_like_times_but_are_not(text):
    assert find_times(text) == []


def test_spelled_numbers_keep_their_words_and_map_back():
    found = spelled_numbers("a table for two at half past five on april sixth, twenty-three guests, a dozen")
    assert [(s.text, s.value, s.ordinal) for s in found] == [
        ("two", 2, False),
        ("five", 5, False),
        ("sixth", 6, True),
        ("twenty-three", 23, False),
        ("a dozen", 12, False),
    ]
    d = digitised("on wednesday april sixth at half past five")
    assert d.text == "on wednesday april 6th at half past 5"
    at = d.text.index("6th")
    assert d.original((at, at + 3)) == (19, 24)  # 'sixth'
    assert d.original((0, len(d.text))) == (0, len("on wednesday april sixth at half past five"))


@pytest.mark.parametrize(
    "given, value",
    [
        ("15:30", "15:30"),
        ("15:30:00", "15:30"),
        ("09:05", "09:05"),
        ("3:30 pm", "15:30"),
        ("noon", "12:00"),
        ("half past 7 in the evening", "19:30"),
        (dt.time(8, 0), "08:00"),
        (dt.datetime(2025, 1, 2, 18, 45), "18:45"),
    ],
)
def test_a_time_parameter_holds_hh_mm(given, value):
    assert coerce(ParameterSpec(name="at", type="time"), given) == value


@pytest.mark.parametrize(
    "given",
    ["25:00", "15:61", "after 3 pm", "in the morning", "7", "soon", "15:30:20", "15:30+02:00", 15, 15.5, True, None],
)
def test_a_time_parameter_refuses_what_is_not_one_time_of_day(given):
    with pytest.raises(InvalidValue, match="time of day"):
        coerce(ParameterSpec(name="at", type="time"), given)


def test_allowed_times_are_checked_after_coercion():
    spec = ParameterSpec(name="slot", type="time", allowed_values=["09:00", "13:00"])
    assert coerce(spec, "1 pm") == "13:00"
    with pytest.raises(InvalidValue, match="must be one of"):
        coerce(spec, "2 pm")


def test_clock_value_is_all_or_nothing():
    assert clock_value(" 7:15 am ") == dt.time(7, 15)
    assert clock_value("at 7:15 am") is None
    assert clock_value("between 5 and 7 pm") is None


@pytest.mark.parametrize(
    "text, start, end",
    [
        ("what flights leave at 1700", "17:00", "17:00"),
        ("leaving after 0830", "08:30", None),
        ("arriving before 2359 please", None, "23:59"),
    ],
)
def test_a_24_hour_clock_without_a_colon_after_a_time_word(text, start, end):
    m = only(text)
    assert (hm(m.start), hm(m.end)) == (start, end)


@pytest.mark.parametrize("text", ["flights in 2024", "a 1700 dollar ticket", "leaving from 1700 people", "room 1700"])
def test_four_digits_that_are_not_a_time_stay_numbers(text):
    assert find_times(text) == []


async def test_a_single_time_parameter_takes_the_clock_time_of_after_or_before():
    flights = template({"name": "depart_time", "type": "time"})
    got = await TemplateParameterExtractor().extract("show me flights after 5 pm", flights)
    assert got.values == {"depart_time": "17:00"} and got.trace[0].score < 0.9  # less sure than 'at 5 pm'


def test_a_24_hour_clock_without_a_colon_is_read_only_when_asked_for():
    assert find_times("products between 1000 and 1500", bare_24h=False) == []
    assert [m.text for m in find_times("products between 1000 and 1500")] == ["between 1000 and 1500"]
    assert [hm(m.start) for m in find_times("leave at 5 pm, not at 1700", bare_24h=False)] == ["17:00"]


async def test_four_digit_amounts_fill_a_price_range_on_a_template_without_a_time():
    prices = template(
        {"name": "min_price", "type": "number", "default": 0}, {"name": "max_price", "type": "number", "required": True}
    )
    got = await TemplateParameterExtractor().extract("products between 1000 and 1500", prices)
    assert got.values == {"min_price": 1000.0, "max_price": 1500.0}
    flights = template({"name": "depart_time", "type": "time"})
    got = await TemplateParameterExtractor().extract("flights leaving after 1700", flights)
    assert got.values == {"depart_time": "17:00"}


@pytest.mark.parametrize("text", ["between 2023 and 2024", "events between 2024-03-05 and 2024-03-06", "after 2000"])
def test_years_are_never_a_24_hour_clock(text):
    assert find_times(text) == []
