"""What a restated request keeps of the values found before it (conversations/follow_up.py): the other end
of the same range goes, another range's ends stay; a list for a one-value parameter is kept only as a list
of values to answer one by one."""

from __future__ import annotations

from server.conversations.follow_up import _replaced_with, _revalidate
from server.templates import ParameterSpec

SPECS = {
    name: ParameterSpec(name=name, type="number")
    for name in ("min_price", "max_price", "min_rating", "max_rating", "limit")
}


def test_one_end_of_a_range_drops_the_other_end_of_that_range_only():
    assert _replaced_with({"max_price"}, SPECS, "products under $100") == {"min_price", "max_price"}
    assert _replaced_with({"min_rating"}, SPECS, "rated 4 or more") == {"min_rating", "max_rating"}
    assert _replaced_with({"max_price"}, SPECS, "all products under $100") == {"min_price", "max_price", "limit"}


def test_a_list_for_a_one_value_parameter_is_kept_only_as_two_to_five_values():
    department = {"department": ParameterSpec(name="department", allowed_values=["Sales", "HR", "Finance"])}
    assert _revalidate({"department": ["Sales", "HR"]}, department) == ({"department": ["Sales", "HR"]}, [])
    assert _revalidate({"department": ["Sales"]}, department) == ({}, ["department"])
    assert _revalidate({"department": ["Sales", "Paris"]}, department) == ({}, ["department"])
