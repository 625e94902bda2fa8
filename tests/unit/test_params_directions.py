"""An origin and a destination take the values their cue words name (params/directions.py): 'to Los Angeles
from Delhi' is Delhi to Los Angeles, whichever list holds each city; a value after the other end's cue is
never the parameter's ('I'm leaving Las Vegas' does not say where to)."""

from __future__ import annotations

import pytest

from server.params.directions import cue_before, direction_of
from server.params.extractor import TemplateParameterExtractor
from server.params.settings import ParameterExtractionSettings
from server.templates import ParameterSpec
from server.testing.templates import template

ORIGIN = {"name": "origin_city", "type": "string", "required": True}
DESTINATION = {"name": "destination_city", "type": "string", "required": True}


@pytest.mark.parametrize(
    ("name", "kind", "direction"),
    [
        ("origin_city", "string", "origin"),
        ("from_location", "string", "origin"),
        ("departure_airport", "string", "origin"),
        ("destination_city", "string", "destination"),
        ("to_account", "string", "destination"),
        ("arrival", "string", "destination"),
        ("pickup_city", "string", None),
        ("from_to", "string", None),  # both: no direction
        ("from_date", "date", None),  # dates have their own roles
    ],
)
def test_direction_of_a_parameter(name, kind, direction):
    assert direction_of(ParameterSpec(name=name, type=kind)) == direction


@pytest.mark.parametrize(
    ("question", "value", "cue"),
    [
        ("flights from Boston", "Boston", "origin"),
        ("I'm leaving Las Vegas on Friday", "Las Vegas", "origin"),
        ("departing from Portland", "Portland", "origin"),
        ("I want to go to Los Angeles", "Los Angeles", "destination"),
        ("arriving in Denver", "Denver", "destination"),
        ("I want to end up in SF", "SF", "destination"),
        ("a flight with Delta", "Delta", None),
    ],
)
def test_cue_before_a_value(question, value, cue):
    start = question.index(value)
    assert cue_before(question, (start, start + len(value))) == cue


async def extract(question: str, *params: dict):
    extractor = TemplateParameterExtractor(ParameterExtractionSettings())
    return await extractor.extract(question, template(*params, tid="flights"))


@pytest.mark.parametrize(
    ("question", "origin", "destination"),
    [
        ("I want to go to Los Angeles from Delhi", "Delhi", "Los Angeles"),
        ("To Washington on the 8th from Atlanta", "Atlanta", "Washington"),
        ("I'm leaving from Phoenix and going to New York", "Phoenix", "New York"),
        ("flights from Boston to Denver", "Boston", "Denver"),
    ],
)
async def test_each_end_takes_the_value_its_cue_names(question, origin, destination):
    got = await extract(question, ORIGIN, DESTINATION)
    assert got.values == {"origin_city": origin, "destination_city": destination}


async def test_a_value_after_the_other_ends_cue_is_not_taken():
    got = await extract("I'm leaving Las Vegas on March 7th", DESTINATION)
    assert got.values.get("destination_city") is None and [p.name for p in got.problems] == ["destination_city"]
    assert got.left_out == [
        {"name": "destination_city", "text": "Las Vegas", "reason": "the words before it say where it goes from"}
    ]


async def test_a_value_after_the_other_ends_cue_goes_to_that_end_when_it_takes_any_text():
    """'from seattle to chicago' when only the origins' list holds Chicago asked for the destination."""
    listed = {"name": "origin_city", "type": "string", "required": True, "allowed_values": ["Seattle", "Chicago"]}
    got = await extract("one way flight from seattle to chicago", listed, DESTINATION)
    assert got.values == {"origin_city": "Seattle", "destination_city": "Chicago"}
    assert got.left_out == []
    # an end with a closed list of its own takes nothing outside it
    closed = {**DESTINATION, "allowed_values": ["Boston"]}
    got = await extract("one way flight from seattle to chicago", listed, closed)
    assert got.values.get("destination_city") is None
