"""A value the question rules out ("not in Engineering", "outside the United States") is not filled: the
parameter would answer the opposite. It is left out with why, a required parameter is asked for, and the
answer's content says it was not applied."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.extractor import TemplateParameterExtractor
from server.params.not_applied import note
from server.params.ruled_out import REASON
from server.params.settings import ParameterExtractionSettings
from server.testing.templates import template

DEPARTMENT = {"name": "department", "required": True, "allowed_values": ["Engineering", "Sales", "Marketing"]}
COUNTRY = {"name": "country", "required": False, "allowed_values": ["United States", "Germany"]}
CUSTOMER = {"name": "customer", "required": True, "description": "Customer name"}


async def extract(question: str, *params: dict):
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 12, 31))
    return await extractor.extract(question, template(*params))


@pytest.mark.parametrize(
    ("question", "spec", "text"),
    [
        ("employees not in engineering", DEPARTMENT, "engineering"),
        ("who doesn't work in Sales?", DEPARTMENT, "Sales"),
        ("everyone except Marketing", DEPARTMENT, "Marketing"),
        ("people who do not work in the Sales team", DEPARTMENT, "Sales"),
        ("customers outside the united states", COUNTRY, "united states"),
        ("orders from anyone other than Orion Data Systems", CUSTOMER, "Orion Data Systems"),
        ("people not based in Sales", DEPARTMENT, "Sales"),
        ("don't include Marketing", DEPARTMENT, "Marketing"),
        ("anything but Sales", DEPARTMENT, "Sales"),
        ("no Marketing people please", DEPARTMENT, "Marketing"),
        ("I don't want Sales", DEPARTMENT, "Sales"),
    ],
)
async def test_a_value_the_question_rules_out_is_not_filled(question, spec, text):
    got = await extract(question, spec)
    assert got.values.get(spec["name"]) is None
    assert {"name": spec["name"], "text": text, "reason": REASON} in got.left_out
    assert [p.name for p in got.problems] == ([spec["name"]] if spec["required"] else [])


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("employees in engineering", "Engineering"),
        ("not only Sales", "Sales"),  # 'not only' adds, it rules nothing out
        ("I'm not sure, show me Marketing", "Marketing"),
        ("not Sales but Marketing", "Marketing"),  # the value asked for, beside the one ruled out
        # a denial of another word: the value is still asked for
        ("employees never promoted in Engineering", "Engineering"),
        ("employees who were not hired in Sales", "Sales"),
        ("people without managers in Marketing", "Marketing"),
        ("employees not only in Engineering", "Engineering"),
        ("no, Sales", "Sales"),  # a reply's 'no,' denies what came before, not the value
        ("I want Marketing, no doubt", "Marketing"),
    ],
)
async def test_a_value_asked_for_is_filled(question, value):
    got = await extract(question, DEPARTMENT)
    assert got.ok and got.values == {"department": value}


def test_the_content_says_a_ruled_out_value_was_not_applied():
    line = note([{"name": "department", "text": "engineering", "reason": REASON}])
    assert line is not None and "'engineering' (department)" in line and "rules it out" in line


async def test_a_guess_the_question_rules_out_is_not_reported():
    """'not counting contractors': 'counting' is no department; a fuzzy guess there is dropped without a word."""
    got = await extract("how many in Engineering, not counting contractors?", DEPARTMENT)
    assert got.values == {"department": "Engineering"} and got.left_out == []
