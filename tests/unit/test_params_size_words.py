"""Sizes said in everyday words (params/size_words.py): a parameter whose allowed values are a size scale
reads 'a medium-sized car' as the standard one and 'a large car' as the full-size one, on the real extractor."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.extractor import TemplateParameterExtractor
from server.params.settings import ParameterExtractionSettings
from server.params.size_words import LARGE, MEDIUM, SIZE, SMALL
from server.templates import ParameterSpec, Template

CARS = ["Compact", "Standard", "Full-size"]


def _cars(allowed: list[str] = CARS) -> Template:
    return Template.model_validate(
        {"id": "cars", "description": "Find rental cars",
         "nl_examples": ["find me a [Compact](car_type) car in [Oakland](city)", "I need a rental car"],
         "parameters": [{"name": "car_type", "type": "string", "allowed_values": allowed},
                        {"name": "city", "type": "string"}],
         "body_key": "sql", "body": "SELECT 1"}
    )  # fmt: skip


async def _size(question: str, template: Template | None = None) -> object:
    template = template or _cars()
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 6, 1))
    await extractor.prepare([template])
    return (await extractor.extract(question, template)).values.get("car_type")


@pytest.mark.parametrize(
    ("question", "value"),
    [
        # found on SGD's rental cars (dev and train-only services): a size the list does not spell
        ("I need a medium-sized rental car on March 4th", "Standard"),
        ("I'd like a large rental car.", "Full-size"),
        ("I would like to rent a medium sized car from Vancouver", "Standard"),
        ("a mid-size car please", "Standard"),
        ("a small car for the weekend", "Compact"),
        ("an extra large car", "Full-size"),  # beyond the scale's end: its end
        ("something not too large", "Standard"),
        ("a full size car", "Full-size"),
        ("a Compact car in Oakland", "Compact"),  # the list's own value
        ("I don't want a large car", None),  # a denial
        ("I need it a little later", None),
        ("a big day tomorrow, I need a car", None),
        ("a small car, or a large one", None),  # two sizes: none
        ("a car in Oakland", None),
        ("I'm looking for a midsize rental in Portland next Friday", "Standard"),
        ("the largest car you have", "Full-size"),
        ("I'd like a small one please", "Compact"),
        ("No, a large one in Denver", "Full-size"),
        ("a not-too-large car in Boston", "Standard"),
        # found by review: inside another word or a name, or of something else than the car
        ("rent a car in Rimini for a week", None),
        ("I need a car in Smallville", None),
        ("I largely drive on highways, need a rental in Denver", None),
        ("a substandard car is fine", None),
        ("a car for the Gemini conference in Houston", None),
        ("can you do me a small favour and find a rental car in Reno", None),
        ("I need it a tiny bit earlier, can I pick up a car in Denver at 9?", None),
        ("is there an intermediate stop in Kansas City where I can rent a car", None),
        ("I need a car, my budget is small, in Memphis", None),
        ("I'll be staying at the Mini Hotel in Chicago and need a car", None),
        ("I'm renting for a small wedding in Napa", None),
        ("a car for a large trip, 2000 miles, from Denver", None),
        ("book a car for Mr. Small in Denver", None),
    ],
)
async def test_size_words_give_the_value_at_their_size(question: str, value: str | None) -> None:
    assert await _size(question) == value


def test_only_a_size_scale_is_read() -> None:
    def scale(values: list[str]) -> dict | None:
        return SIZE.scale(ParameterSpec(name="p", type="string", allowed_values=values))

    assert scale(CARS) == {SMALL: "Compact", MEDIUM: "Standard", LARGE: "Full-size"}
    assert scale(["small", "medium", "large"]) == {SMALL: "small", MEDIUM: "medium", LARGE: "large"}
    assert scale(["S", "M", "L"]) is None  # letters: the list reader's
    assert scale(["Economy", "Premium Economy", "Business", "First"]) is None  # classes, not sizes
    assert scale(["Compact", "small"]) is None  # two values at one size
    assert scale(["Music", "Sports"]) is None


async def test_a_size_word_of_another_list_stays_with_it() -> None:
    """Found by review: 'standard mail' lost the shipping method 'standard' to a package's medium size."""
    template = Template.model_validate(
        {"id": "ship", "description": "Ship a package",
         "nl_examples": ["send a [small](package_size) package to [Austin](city) by [express](shipping)",
                         "ship a parcel to [Boise](city)"],
         "parameters": [{"name": "shipping", "type": "string", "allowed_values": ["standard", "express"]},
                        {"name": "package_size", "type": "string", "allowed_values": ["small", "medium", "large"]},
                        {"name": "city", "type": "string"}],
         "body_key": "sql", "body": "SELECT 1"}
    )  # fmt: skip
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 6, 1))
    await extractor.prepare([template])
    got = (await extractor.extract("send a package to Austin by standard mail", template)).values
    assert (got.get("shipping"), got.get("package_size")) == ("standard", None)
    got = (await extractor.extract("send a medium-sized package to Austin", template)).values
    assert got.get("package_size") == "medium"
