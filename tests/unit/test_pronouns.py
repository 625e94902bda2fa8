"""A pronoun of one person read as the name the last answer was given (server/conversations/pronouns.py)."""

from __future__ import annotations

import pytest

from server.conversations.pronouns import refers_to_a_person, the_one_name, with_name
from server.templates import ParameterSpec

NAME = ParameterSpec(name="name", type="string", description="Employee name")
MANAGER = ParameterSpec(name="manager_name", type="string", description="Full name of the manager")
CITY = ParameterSpec(name="city", type="string")
YEAR = ParameterSpec(name="year", type="integer")
DEPARTMENT = ParameterSpec(name="department", type="string", description="Department name", allowed_values=["Sales"])


@pytest.mark.parametrize(
    "message, refers",
    [
        ("show his reviews", True),
        ("who reports to Her?", True),
        ("where does she work", True),
        ("how many of them are in London?", False),
        ("list them", False),
        ("what is it", False),
        ("show the history of Sherman", False),
    ],
)
def test_only_the_pronouns_of_one_person_refer_to_a_person(message, refers):
    assert refers_to_a_person(message) is refers


@pytest.mark.parametrize(
    "message, named",
    [
        ("show his reviews", "show Marcus Webb's reviews"),
        ("who reports to her?", "who reports to Marcus Webb?"),
        ("how many people report to her in total", "how many people report to Marcus Webb in total"),
        ("what about her reviews", "what about Marcus Webb's reviews"),
        ("when was he hired?", "when was Marcus Webb hired?"),
        ("and who does she manage", "and who does Marcus Webb manage"),
        ("is the laptop hers?", "is the laptop Marcus Webb's?"),
        ("email him", "email Marcus Webb"),
    ],
)
def test_the_pronoun_becomes_the_name_or_its_possessive(message, named):
    assert with_name(message, "Marcus Webb") == named


def test_a_name_said_in_lower_case_is_capitalised_in_the_message():
    assert with_name("show his reviews", "marcus webb") == "show Marcus Webb's reviews"


def test_the_one_name_said_before():
    assert the_one_name({"name": "Marcus Webb", "year": 2024}, {"name": NAME, "year": YEAR}) == "Marcus Webb"
    assert the_one_name({"manager_name": "Priya Raman"}, {"manager_name": MANAGER}) == "Priya Raman"


def test_no_name_when_it_is_not_clear_who():
    two = {"name": "Marcus Webb", "manager_name": "Priya Raman"}
    assert the_one_name(two, {"name": NAME, "manager_name": MANAGER}) is None  # which one is 'him'?
    assert the_one_name({"city": "Boston"}, {"city": CITY}) is None  # a city is nobody
    assert the_one_name({"year": 2024}, {"year": YEAR}) is None
    assert the_one_name({"department": "Sales"}, {"department": DEPARTMENT}) is None  # a fixed list's name
