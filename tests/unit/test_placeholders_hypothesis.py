"""Property tests: whatever a parameter value is, every adapter's rendered request carries it only as a
literal value at the placeholder's place, and nothing else in the request changes."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from server.adapters.elasticsearch import parse_es_body, render_search
from server.adapters.graphql import parse_graphql_body
from server.adapters.http import encode_segment, query_pairs
from server.adapters.mongodb import parse_mongo_body, render_mongo
from server.adapters.placeholders import Placeholder, parse_structure, placeholders_in, render

HOSTILE = [
    '{"$gt": ""}',
    "$where",
    "$price",
    "'; DROP TABLE t; --",
    '"},{"a":1}',
    "../../etc/passwd",
    "..",
    "... on Car { price }",
    "{{x}}",
    '{"$param": "x"}',
    "a&b=c#d",
    "\\u0000",
    "ä😀\u202e",
    "x" * 10_000,
]
hostile_text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=300))
scalar = st.one_of(
    hostile_text, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none()
)
value = st.one_of(scalar, st.lists(scalar, max_size=5))

# JSON-like template trees with placeholders named p0..p2 scattered through them
names = st.sampled_from(["p0", "p1", "p2"])
leaf = st.one_of(
    st.integers(),
    st.text(alphabet="abc $.", max_size=5).filter(lambda s: "{{" not in s),
    names.map(lambda n: {"$param": n}),
    names.map(lambda n: "{{" + n + "}}"),
)
key = st.text(alphabet="abcxyz$_", min_size=1, max_size=6).filter(lambda k: k != "$param")
tree = st.recursive(
    leaf, lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(key, kids, max_size=3)), max_leaves=12
)


def substituted(raw: Any, params: dict[str, Any]) -> Any:
    """What the raw template should become: each placeholder replaced by its value, nothing else touched."""
    if isinstance(raw, dict):
        if set(raw) == {"$param"}:
            return params.get(raw["$param"])
        return {k: substituted(v, params) for k, v in raw.items()}
    if isinstance(raw, list):
        return [substituted(v, params) for v in raw]
    if isinstance(raw, str) and raw.startswith("{{"):
        return params.get(raw[2:-2])
    return raw


@settings(max_examples=200, deadline=None)
@given(raw=tree, params=st.fixed_dictionaries({}, optional={"p0": value, "p1": value, "p2": value}))
def test_render_only_replaces_placeholders(raw, params):
    parsed = parse_structure(raw)
    out = render(parsed.value, params)
    assert out == substituted(raw, params)
    assert not any(True for _ in placeholders_in(out))
    assert json.loads(json.dumps(out)) == out  # plain JSON: no Placeholder or other object survives


@settings(max_examples=200, deadline=None)
@given(v=hostile_text)
def test_mongo_string_is_never_an_operator(v):
    body = parse_mongo_body(
        {"collection": "cars", "filter": {"make": {"$param": "make"}, "$expr": {"$eq": ["$model", "{{make}}"]}}}
    ).value
    sent = render_mongo(body, {"make": v}, cap=10)
    assert sent["filter"] == {"make": v, "$expr": {"$eq": ["$model", {"$literal": v}]}}
    assert sent["collection"] == "cars"


@settings(max_examples=200, deadline=None)
@given(v=hostile_text.filter(lambda s: s != "" and set(s) != {"."}))
def test_http_path_segment_round_trips_and_stays_one_segment(v):
    segment = encode_segment("p", v)
    assert "/" not in segment and "?" not in segment and "#" not in segment
    assert unquote(segment) == v


@given(v=st.sampled_from([".", "..", "..."]))
def test_dot_segments_are_encoded(v):
    assert encode_segment("p", v) == "%2E" * len(v)


@settings(max_examples=200, deadline=None)
@given(v=st.one_of(hostile_text, st.lists(hostile_text, max_size=4)))
def test_http_query_pairs_carry_the_value(v):
    query = parse_structure({"q": {"$param": "q"}, "fixed": "yes"}).value
    pairs = query_pairs(query, {"q": v})
    expected = [("q", item) for item in (v if isinstance(v, list) else [v])]
    assert pairs == [*expected, ("fixed", "yes")]


ECHO = parse_graphql_body({"query": "query($t: String) { echo(text: $t) { text } }", "variables": {"t": "{{t}}"}}).value


@settings(max_examples=200, deadline=None)
@given(v=value)
def test_graphql_query_text_never_changes(v):
    parsed = ECHO
    assert parsed.query == "query($t: String) { echo(text: $t) { text } }"
    assert render(parsed.variables, {"t": v}) == {"t": v}


@settings(max_examples=200, deadline=None)
@given(v=hostile_text)
def test_elasticsearch_body_differs_only_at_the_placeholder(v):
    body = parse_es_body(
        {
            "index": "tickets",
            "body": {
                "size": 5,
                "query": {"bool": {"filter": [{"term": {"product": "{{p}}"}}, {"match": {"title": {"$param": "p"}}}]}},
            },
        }
    ).value
    assert render_search(body, {"p": v}, cap=100) == {
        "size": 5,
        "query": {"bool": {"filter": [{"term": {"product": v}}, {"match": {"title": v}}]}},
    }


def test_placeholder_type_is_not_json():
    assert not isinstance(Placeholder("x"), str | dict)
