"""Which parameter a pronoun fills, and with which name said before (server/conversations/pronouns.py)."""

from __future__ import annotations

import pytest

from server.conversations.pronouns import referred_to, refers_to_a_person
from server.templates import ParameterSpec


def _spec(name: str, **kw) -> ParameterSpec:
    return ParameterSpec(name=name, **kw)


NAME = _spec("name", type="string", description="Employee name")
MANAGER = _spec("manager_name", type="string", description="Full name of the manager")
CUSTOMER = _spec("customer", type="string")
CITY = _spec("city", type="string")
DEPARTMENT = _spec("department", type="string", description="Department name", allowed_values=["Sales", "HR"])
YEAR = _spec("year", type="integer")


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


def test_the_same_name_first_then_the_only_name_for_the_only_name_missing():
    said = {"name": "Marcus Webb", "year": 2024}
    specs = {"name": NAME, "year": YEAR}
    assert referred_to(said, specs, [NAME]) == {"name": "Marcus Webb"}
    assert referred_to(said, specs, [MANAGER]) == {"manager_name": "Marcus Webb"}
    assert referred_to(said, specs, [MANAGER, YEAR]) == {"manager_name": "Marcus Webb"}


def test_nothing_when_it_is_not_clear_which():
    two = {"name": "Marcus Webb", "customer": "Orion Data"}
    specs = {"name": NAME, "customer": CUSTOMER}
    assert referred_to(two, specs, [MANAGER]) == {}  # two names said: which one is 'him'?
    assert referred_to({"name": "Marcus Webb"}, {"name": NAME}, [MANAGER, CUSTOMER]) == {}  # two names missing
    assert referred_to({"city": "Boston"}, {"city": CITY}, [MANAGER]) == {}  # a city is nobody
    assert referred_to({"year": 2024}, {"year": YEAR}, [MANAGER]) == {}
    assert referred_to({"department": "Sales"}, {"department": DEPARTMENT}, [MANAGER]) == {}  # a list's name
