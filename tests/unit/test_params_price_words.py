"""Price levels said in everyday words (params/price_words.py): a parameter whose allowed values are a price
scale reads 'not very costly', 'pricey', 'on a budget' as the value at that level, on the real extractor."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.extractor import TemplateParameterExtractor
from server.params.price_words import CHEAP, EXPENSIVE, MODERATE, PRICE, VERY_EXPENSIVE
from server.params.settings import ParameterExtractionSettings
from server.templates import ParameterSpec, Template

LEVELS = ["inexpensive", "moderate", "expensive", "very expensive"]


def _restaurants(allowed: list[str] = LEVELS, required: bool = False) -> Template:
    return Template.model_validate(
        {"id": "restaurants", "description": "Find restaurants",
         "nl_examples": ["find a [moderate](price_range) place to eat in [Oakland](city)", "somewhere to eat"],
         "parameters": [{"name": "price_range", "type": "string", "required": required, "allowed_values": allowed},
                        {"name": "city", "type": "string"}],
         "body_key": "sql", "body": "SELECT 1"}
    )  # fmt: skip


async def _price(question: str, template: Template | None = None) -> object:
    template = template or _restaurants()
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 6, 1))
    await extractor.prepare([template])
    return (await extractor.extract(question, template)).values.get("price_range")


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("find me a place to eat that's not very costly", "moderate"),
        ("something not too expensive in Oakland", "moderate"),  # the list's 'expensive' is inside: overridden
        ("an affordable restaurant please", "moderate"),
        ("a reasonably priced place", "moderate"),
        ("somewhere intermediate priced", "moderate"),
        ("a pricey place to eat", "expensive"),
        ("restaurants with above average pricing", "expensive"),
        ("I want a fancy place", "expensive"),
        ("a cheap place to eat", "inexpensive"),
        ("a low priced restaurant", "inexpensive"),
        ("I'm on a budget", "inexpensive"),
        ("a really expensive place for our anniversary", "very expensive"),
        ("a very expensive place", "very expensive"),  # the list's own value, said outright
        ("moderate priced food", "moderate"),
        ("I fancy some pizza", None),  # the verb
        # found by review: a denial, the verb, a budget that is an amount, a question about prices
        ("do you fancy Italian food tonight?", None),
        ("I really fancy sushi", None),
        ("something really fancy for our anniversary", "expensive"),
        ("I am trying to find fancy place to eat", "expensive"),
        ("some nice places with fancy prices", "expensive"),
        ("somewhere not too fancy in Oakland", "moderate"),
        ("nothing fancy, just a place to eat", None),
        ("nothing pricey please", None),
        ("I don't want anything pricey", None),
        ("a dive bar, nothing high-end", None),
        ("less pricey than last time", None),
        ("not expensive but not cheap", None),
        ("the least expensive place", "inexpensive"),
        ("what's the average price at places in Oakland", None),
        ("my budget is 100 dollars for four people", None),
        ("we have a budget of $300 for the team dinner", None),
        ("a place under 30 $ per person", None),
        # found by a second review
        ("budget doesn't matter, find the best place in Oakland", None),
        ("a budget under $200 for two", None),
        ("dinner for about $ 100 per person", None),
        ("a budget-friendly place", "inexpensive"),
        ("the most affordable place", "inexpensive"),
        ("a fancy dress party venue", None),
        ("I'm on a budget but want something not very costly", None),  # two levels: none
        ("somewhere to eat in Oakland", None),
        # found by review: a phrase is matched as whole words, every alternative of it
        ("a place near the Poshmark office", None),
        ("no bargaining, just a place to eat", None),
    ],
)
async def test_price_words_give_the_value_at_their_level(question: str, value: str | None) -> None:
    assert await _price(question) == value


async def test_a_level_beyond_the_scale_is_its_end() -> None:
    """Found by review: 'the most expensive restaurant' on [cheap, moderate, expensive] had lost its value."""
    three = _restaurants(["cheap", "moderate", "expensive"])
    assert await _price("the most expensive restaurant in Oakland", three) == "expensive"
    assert await _price("a very expensive place", three) == "expensive"
    assert await _price("somewhere not very pricey", three) == "moderate"
    assert await _price("a budget place", three) == "cheap"
    two = _restaurants(["cheap", "expensive"])
    assert await _price("a moderately priced place", two) is None  # between its two levels: nothing


def test_only_a_price_scale_is_read() -> None:
    def scale(values: list[str]) -> dict | None:
        return PRICE.scale(ParameterSpec(name="p", type="string", allowed_values=values))

    assert scale(LEVELS) == {
        CHEAP: "inexpensive",
        MODERATE: "moderate",
        EXPENSIVE: "expensive",
        VERY_EXPENSIVE: "very expensive",
    }
    assert scale(["$", "$$", "$$$", "$$$$"]) == {CHEAP: "$", MODERATE: "$$", EXPENSIVE: "$$$", VERY_EXPENSIVE: "$$$$"}
    assert scale(["low", "medium", "high"]) is None  # no price words: a scale of anything
    assert scale(["cheap", "inexpensive"]) is None  # two values at one level
    assert scale(["Music", "Sports"]) is None
    assert scale(["moderate"]) is None  # one value is no scale


def test_the_longest_phrase_wins() -> None:
    said = PRICE.find("not very costly, and not the $400 one")
    assert [(p.text, p.level) for p in said] == [("not very costly", MODERATE)]
