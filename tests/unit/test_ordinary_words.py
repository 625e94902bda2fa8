"""The words of a template's examples outside their marks, read once per template object, and the closed-list
matchers they go into, shared by the copies a clarification makes (params/choice_cache.py)."""

from __future__ import annotations

import gc

from server.params.choice_cache import ChoiceCache, lower_case_words, ordinary_words
from server.testing.templates import template

SIZE = {"name": "size", "type": "string", "allowed_values": ["small", "large"]}
COLOUR = {"name": "colour", "type": "string", "allowed_values": ["red", "blue"]}


def test_read_once_per_template_and_forgotten_with_it():
    t = template(SIZE, examples=["a [large](size) one please", "show me shirts"])
    first = ordinary_words(t)
    assert first == {"a", "one", "please", "show", "me", "shirts"} and ordinary_words(t) is first
    key = id(t)
    assert key in ordinary_words.memo
    del t
    gc.collect()
    assert key not in ordinary_words.memo


def test_lower_case_words_leave_out_names_an_example_capitalises():
    t = template(examples=["Show me Priya Raman's reviews", "check the reviews of an employee"])
    assert lower_case_words(t) == {"show", "me", "reviews", "check", "the", "of", "an", "employee"}


def test_a_copy_with_fewer_parameters_shares_the_matchers():
    cache = ChoiceCache(floor=80.0)
    t = template(SIZE, COLOUR, examples=["a [large](size) [red](colour) shirt"])
    size = t.parameters[0]
    cache.matcher(t, size, None)
    copy = t.model_copy(update={"parameters": [size]})
    assert cache.cached(copy, size, None) is not None  # a clarification's copy: nothing rebuilt
    other = template(SIZE, COLOUR, examples=["something else"])  # the same id, other examples (a reload)
    assert cache.cached(other, other.parameters[0], None) is None
