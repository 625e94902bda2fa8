"""An answer says the defaults that chose what it is about ("Assumed (not in the question): year 2025."), and
not those that only bound or cut it (a limit, an open end, a lower price of 0)."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.extractor import TemplateParameterExtractor
from server.params.settings import ParameterExtractionSettings
from server.service.formatting import assumed_line
from server.testing.templates import template

YEAR = {"name": "year", "type": "integer", "default": 2025, "min": 2020, "max": 2025}
STATUS = {"name": "status", "default": "completed", "allowed_values": ["completed", "returned"]}
LIMIT = {"name": "limit", "type": "integer", "default": 50}
MIN_PRICE = {"name": "min_price", "type": "number", "default": 0}
END = {"name": "end_date", "type": "date", "default": "2099-12-31"}
ACTIVE = {"name": "active_only", "type": "boolean", "default": True}


async def line(question: str, *params: dict) -> str | None:
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 12, 31))
    t = template(*params)
    got = await extractor.extract(question, t)
    return assumed_line(t, got.values, got)


async def test_a_default_that_chooses_the_data_is_said():
    said = await line("best sellers", YEAR, STATUS, LIMIT)
    assert said == "Assumed (not in the question): year 2025, status completed."


@pytest.mark.parametrize("question", ["best sellers in 2024", "returned orders in 2023"])
async def test_a_value_the_question_gives_is_not_assumed(question):
    said = await line(question, YEAR, LIMIT)
    assert said is None


async def test_defaults_that_only_bound_or_cut_are_not_said():
    assert await line("products", LIMIT, MIN_PRICE, END, ACTIVE) is None
