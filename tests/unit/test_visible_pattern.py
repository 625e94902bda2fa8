"""The `query` pattern of /openapi.json says exactly what the server calls a blank question: for every code
point, the pattern finds a visible character in it iff question normalisation keeps something of it."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from server.api.requests import QueryRequest
from server.api.visible import visible_pattern
from server.routing.normalise import normalise_question

PATTERN = re.compile(visible_pattern())


def test_every_code_point_agrees_with_normalisation():
    disagree = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if bool(PATTERN.search(chr(code))) != bool(normalise_question(chr(code)))
    ]
    assert disagree == []


@given(st.text(max_size=12))
@settings(max_examples=2000, deadline=None)
def test_any_text_agrees_with_normalisation(text: str):
    assert bool(PATTERN.search(text)) == bool(normalise_question(text))


def test_the_request_schema_carries_it():
    assert QueryRequest.model_json_schema()["properties"]["query"]["pattern"] == visible_pattern()
