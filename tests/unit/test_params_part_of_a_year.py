"""A year parameter filled from a shorter period ('Q2 2024', 'March 2024') is the period's year, and the
rest of the period is said not to be applied: the answer covers the whole year, and says so."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.extractor import TemplateParameterExtractor
from server.params.not_applied import WIDENED, note
from server.params.settings import ParameterExtractionSettings
from server.testing.templates import template

YEAR = {"name": "year", "type": "integer", "default": 2025, "min": 2020, "max": 2025}


async def extract(question: str):
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 12, 31))
    return await extractor.extract(question, template(YEAR))


@pytest.mark.parametrize(
    ("question", "period"),
    [
        ("how many orders did we get in Q2 2024", "Q2 2024"),
        ("order totals for march 2024", "march 2024"),
        ("orders in the first half of 2024", "the first half of 2024"),
    ],
)
async def test_a_period_shorter_than_its_year_is_said_to_be_widened(question, period):
    got = await extract(question)
    assert got.values == {"year": 2024}
    (entry,) = got.left_out
    assert (entry["name"], entry["text"]) == ("year", period) and str(entry["reason"]).startswith(WIDENED)
    line = note(got.left_out)
    assert line == f"Widened: '{period}' (year): this query takes a whole year, so the answer covers all of it."


@pytest.mark.parametrize("question", ["how many orders in 2024", "orders last year", "orders in fiscal year 2024"])
async def test_a_whole_year_is_not_widened(question):
    got = await extract(question)
    assert got.values == {"year": 2024} and got.left_out == []
