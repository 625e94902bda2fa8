"""A pickup and a dropoff date take the days their words name (params/stretches.py): 'pick it up on Saturday
and drop it off on the 8th', 'until the 14th' closes the stretch, a day said plainly opens it."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.extractor import TemplateParameterExtractor
from server.params.settings import ParameterExtractionSettings
from server.params.stretches import stretch_of
from server.templates import ParameterSpec
from server.testing.templates import template

TODAY = dt.date(2019, 3, 1)  # a Friday
PICKUP = {"name": "pickup_date", "type": "date", "required": True}
DROPOFF = {"name": "dropoff_date", "type": "date", "required": True}
CITY = {"name": "pickup_city", "type": "string"}


def _spec(name: str, kind: str = "date") -> ParameterSpec:
    return ParameterSpec(name=name, type=kind)


@pytest.mark.parametrize(
    ("names", "pair"),
    [
        (("pickup_date", "dropoff_date"), ("pickup_date", "dropoff_date")),
        (("check_in_date", "check_out_date"), ("check_in_date", "check_out_date")),
        (("departure_date", "return_date"), ("departure_date", "return_date")),
        (("pick_up_date", "drop_off_date"), ("pick_up_date", "drop_off_date")),
        (("pickup_date", "visit_date"), ("pickup_date", None)),  # one end only
        (("check_in_date", "number_of_days"), ("check_in_date", None)),
        (("start_date", "end_date"), None),  # the date reader's own start and end roles place those
        (("visit_date",), None),
    ],
)
def test_the_pair_is_found_by_its_names(names, pair):
    stretch = stretch_of([_spec(n) for n in names])
    ends = None if stretch is None else tuple(None if s is None else s.name for s in (stretch.opens, stretch.closes))
    assert ends == pair


async def test_with_one_end_only_a_day_said_for_the_other_end_is_not_its_value():
    """Found by a QA pass: 'check in tomorrow, check out sunday' on a booking with a check-in date and a number of
    nights checked in on Sunday."""
    booking = template({"name": "check_in_date", "type": "date"}, {"name": "number_of_days", "type": "integer"})
    settings = ParameterExtractionSettings(date_direction="future")  # a booking's days are ahead
    extractor = TemplateParameterExtractor(settings, today=lambda: dt.date(2019, 3, 1))
    got = await extractor.extract("check in tomorrow, check out sunday", booking)
    assert got.values["check_in_date"] == "2019-03-02"
    got = await extractor.extract("checking in march 10th, checking out march 14th", booking)
    assert got.values["check_in_date"] == "2019-03-10"
    got = await extractor.extract("the 12th please", booking)  # a day said plainly is the one end there is
    assert got.values["check_in_date"] == "2019-03-12"


def test_text_parameters_named_like_ends_are_no_stretch():
    assert stretch_of([_spec("pickup_location", "string"), _spec("dropoff_location", "string")]) is None


async def extract(question: str, *params: dict) -> dict:
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(date_direction="future"), today=lambda: TODAY)
    got = await extractor.extract(question, template(*params, tid="cars"))
    return {k: v for k, v in got.values.items() if v is not None}


@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("I need a rental car on Wednesday", {"pickup_date": "2019-03-06"}),  # said plainly: it opens
        ("I need to pick up a rental car on Wednesday next week", {"pickup_date": "2019-03-06"}),
        ("I need a car until the 14th", {"dropoff_date": "2019-03-14"}),
        ("I'll be dropping it off on the 4th", {"dropoff_date": "2019-03-04"}),
        ("a car from the 4th of March until the 8th", {"pickup_date": "2019-03-04", "dropoff_date": "2019-03-08"}),
        ("I need it Saturday this week until March 8th", {"pickup_date": "2019-03-02", "dropoff_date": "2019-03-08"}),
        (
            "a car on the 3rd, I'll bring it back on the 6th",
            {"pickup_date": "2019-03-03", "dropoff_date": "2019-03-06"},
        ),
        # a day said plainly closes the stretch when another day opens it
        (
            "a party on March 11th, so I need a car from the 10th of March",
            {"pickup_date": "2019-03-10", "dropoff_date": "2019-03-11"},
        ),
    ],
)
async def test_each_day_goes_to_the_end_its_words_name(question, want):
    assert await extract(question, PICKUP, DROPOFF) == want


DEPARTURE = {"name": "departure_date", "type": "date", "required": True}
RETURN = {"name": "return_date", "type": "date", "required": True}


@pytest.mark.parametrize(
    ("question", "params", "want"),
    [  # found on SGD's train-only services: the words between the closing word and its day
        ("search flights with a return date of 7th of this month", (DEPARTURE, RETURN), {"return_date": "2019-03-07"}),
        ("I'm looking for a returning flight on the 14th", (DEPARTURE, RETURN), {"return_date": "2019-03-14"}),
        ("I'll return the car on the 13th", (PICKUP, DROPOFF), {"dropoff_date": "2019-03-13"}),
        ("I fly out on the 4th and come back on the 9th", (DEPARTURE, RETURN),
         {"departure_date": "2019-03-04", "return_date": "2019-03-09"}),
        # found by review: the opening word does not reach across them
        ("I leave on the 3rd and I'm coming back from my trip on the 9th", (DEPARTURE, RETURN),
         {"departure_date": "2019-03-03", "return_date": "2019-03-09"}),
        ("I need a car from my return flight on the 5th", (PICKUP, DROPOFF), {"pickup_date": "2019-03-05"}),
    ],
)  # fmt: skip
async def test_a_closing_word_reaches_its_day_across_the_thing_it_returns(question, params, want):
    assert await extract(question, *params) == want


async def test_two_days_said_plainly_are_left_to_the_other_readers():
    """'March 3 and March 6' says nothing of which is which: both stay candidates of both ends, as before."""
    got = await extract("a car, March 3 and March 6", PICKUP, DROPOFF)
    assert set(got.values()) <= {"2019-03-03", "2019-03-06"}


async def test_one_end_alone_takes_any_day():
    """Where only the dropoff is asked (the pickup settled before), 'on the 4th' is the dropoff."""
    assert await extract("on the 4th", DROPOFF) == {"dropoff_date": "2019-03-04"}
    assert await extract("Fremont on the 4th", PICKUP, CITY) == {"pickup_date": "2019-03-04", "pickup_city": "Fremont"}


@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("I need a car by Friday", {}),  # a bound, not the dropoff
        ("I need to pick it up after March 3", {}),
        (
            "I need to fly out on March 4 and come back March 8",
            {"pickup_date": "2019-03-04", "dropoff_date": "2019-03-08"},
        ),
        # a day said plainly never closes before the stretch opens: it is left out, and the dropoff asked for
        ("I'll fly in on March 2, need a car from March 4", {"pickup_date": "2019-03-04"}),
        ("I need a car till the 8th and my party is on the 9th", {"dropoff_date": "2019-03-08"}),
        # 'from' inside the day's own words opens it; the day said plainly after it closes
        (
            "a party on March 11th, so I need a car from the 4th",
            {"pickup_date": "2019-03-04", "dropoff_date": "2019-03-11"},
        ),
        ("pick it up on Friday, Friday works", {"pickup_date": "2019-03-01"}),
    ],
)
async def test_bounds_and_days_out_of_order_fill_no_end_they_do_not_name(question, want):
    assert await extract(question, PICKUP, DROPOFF) == want


async def test_the_digits_of_a_day_are_no_count_nor_a_listed_value():
    """Found by a QA pass: 'from march 8 to march 11, 2 rooms' took 8 nights and read 'march 11, 2' as no day."""
    booking = template(
        {"name": "check_in_date", "type": "date"},
        {"name": "number_of_days", "type": "string", "required": True, "description": "Number of days in the stay"},
        {"name": "number_of_rooms", "type": "integer"},
    )
    settings = ParameterExtractionSettings(date_direction="future")
    extractor = TemplateParameterExtractor(settings, today=lambda: dt.date(2019, 3, 1))
    got = await extractor.extract("book the hilton from march 8 to march 11, 2 rooms", booking)
    assert got.values["check_in_date"] == "2019-03-08" and got.values["number_of_rooms"] == 2
    assert got.values.get("number_of_days") is None  # asked: neither 8 nor 11 counts nights
    got = await extractor.extract("check in on march 8, 2 rooms", booking)
    assert (got.values["check_in_date"], got.values.get("number_of_days")) == ("2019-03-08", None)
