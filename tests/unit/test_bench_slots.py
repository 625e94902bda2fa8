"""scripts/bench_slots.py: the tree it writes loads, annotations sit on the spans, and the value rule holds.

A tiny synthetic schema stands in for SGD (no server is started: the benchmark itself does that)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from server.runtime.loader import load_config
from server.templates import ParameterSpec, ParameterType
from server.testing.scripts import load_script

TODAY = dt.date(2019, 3, 1)


bench = load_script("bench_slots")


def _service(name: str) -> dict:
    return {
        "service_name": name,
        "description": "Order flowers",
        "slots": [
            {"name": "city", "description": "City to deliver to", "is_categorical": False, "possible_values": []},
            {"name": "delivery_date", "description": "Day of delivery", "is_categorical": False, "possible_values": []},
            {"name": "pickup_time", "description": "Time of pickup", "is_categorical": False, "possible_values": []},
            {"name": "count", "description": "Bouquets", "is_categorical": True, "possible_values": ["1", "2", "3"]},
            {"name": "express", "description": "Fast", "is_categorical": True, "possible_values": ["True", "False"]},
            {"name": "color", "description": "Colour", "is_categorical": True, "possible_values": ["red", "blue"]},
        ],
        "intents": [
            {
                "name": "OrderFlowers",
                "description": "Order a bouquet of flowers",
                "required_slots": ["city", "count"],
                "optional_slots": {"delivery_date": "dontcare", "color": "dontcare", "express": "False"},
            },
            {
                "name": "PickUp",
                "description": "Pick up an order at the shop",
                "required_slots": ["pickup_time"],
                "optional_slots": {},
            },
            {"name": "ListShops", "description": "List flower shops", "required_slots": [], "optional_slots": {}},
        ],
    }


def _turn(dialogue: str, service: str, intent: str, text: str, values: dict, spans: list) -> Any:
    return bench.Turn(dialogue, service, intent, text, values, tuple(bench.Span(*s) for s in spans))


def _spanned(dialogue: str, service: str, city: str, extra: str = "") -> Any:
    text = f"Send flowers to {city}{extra}"
    start = len("Send flowers to ")
    return _turn(dialogue, service, "OrderFlowers", text, {"city": [city]}, [("city", start, start + len(city), city)])


TRAIN = [
    _spanned("1_00000", "Flowers_1", "Boston"),
    _spanned("1_00001", "Flowers_1", "Denver", " (quickly)"),  # markup characters: never an example
    _turn("1_00002", "Flowers_1", "OrderFlowers", "I want flowers", {}, []),
    _turn("1_00003", "Flowers_1", "PickUp", "I'll pick up my order at 5 pm", {"pickup_time": ["5 pm"]},
          [("pickup_time", 25, 29, "5 pm")]),
]  # fmt: skip
DEV = [
    _spanned("2_00000", "Flowers_1", "Austin"),
    *[_spanned(f"3_{i:05d}", "Flowers_2", f"Town{i}") for i in range(12)],
]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, object, object]:
    train_schema = {"Flowers_1": _service("Flowers_1")}
    dev_schema = {**train_schema, "Flowers_2": _service("Flowers_2")}  # as in SGD: dev lists seen services too
    plan = bench.plan_from(train_schema, dev_schema, TRAIN, DEV)
    config_dir, stats = bench.build_tree(tmp_path / "tree", plan, 5, 0, False, tmp_path / "cache")
    return config_dir, plan, stats


def test_tree_loads_with_typed_parameters(tree) -> None:
    config_dir, _, stats = tree
    loaded = load_config(config_dir)
    assert sorted(a.name for a in loaded.adapters) == ["Flowers_1", "Flowers_2", "sgd"]
    order = next(t for t in loaded.templates["Flowers_1"] if t.id == "Flowers_1.OrderFlowers")
    specs = {p.name: p for p in order.parameters}
    assert specs["city"].required and specs["count"].required
    assert not specs["delivery_date"].required and specs["delivery_date"].default is None  # no SGD default
    assert specs["count"].type is ParameterType.INTEGER and specs["count"].allowed_values == [1, 2, 3]
    assert specs["express"].type is ParameterType.BOOLEAN
    assert specs["color"].allowed_values == ["red", "blue"]
    assert specs["delivery_date"].type is ParameterType.DATE
    assert specs["city"].values_from is not None and not specs["city"].values_from.strict
    pick_up = next(t for t in loaded.templates["Flowers_1"] if t.id == "Flowers_1.PickUp")
    assert pick_up.parameters[0].type.value == bench.time_parameter_type()
    marked = [(a.value_of(m), m.parameter) for a in order.annotated_examples() for m in a.spans]
    assert ("Boston", "city") in marked and all("](" not in e for e in order.nl_examples)
    assert not any("Denver" in e for e in order.nl_examples)
    with sqlite3.connect(config_dir.parent / "data" / "Flowers_1.db") as db:  # train spans only
        assert sorted(r[0] for r in db.execute('SELECT value FROM "lookup_city"')) == ["Boston", "Denver"]
    assert stats.templates == 6


def test_unseen_examples_and_scored_questions_never_overlap(tree) -> None:
    _, plan, _ = tree
    scored = {turn.dialogue_id for split, turn in plan.scored if split == "unseen"}
    pooled = {turn.dialogue_id for turn in plan.pools["Flowers_2"]}
    assert scored and pooled and not scored & pooled
    assert scored | pooled == {t.dialogue_id for t in DEV if t.service == "Flowers_2"}
    assert [t.dialogue_id for s, t in plan.scored if s == "seen"] == ["2_00000"]


def test_train_only_services_are_held_out_as_the_unseen_ones() -> None:
    """`--services train-only`: the services only train has, half of their dialogues as examples and the
    other half scored; the services dev has are left out."""
    train_schema = {"Flowers_1": _service("Flowers_1"), "Flowers_3": _service("Flowers_3")}
    dev_schema = {"Flowers_1": _service("Flowers_1")}
    train = TRAIN + [_spanned(f"4_{i:05d}", "Flowers_3", f"Town{i}") for i in range(12)]
    plan = bench.train_only_plan(train_schema, dev_schema, train)
    assert list(plan.services) == ["Flowers_3"]
    scored = {turn.dialogue_id for split, turn in plan.scored if split == "train_only"}
    pooled = {turn.dialogue_id for turn in plan.pools["Flowers_3"]}
    assert scored and pooled and not scored & pooled and len(scored) == len(plan.scored)
    assert scored | pooled == {t.dialogue_id for t in train if t.service == "Flowers_3"}


def test_annotations_sit_on_the_spans() -> None:
    categorical = {"count": ["1", "2", "3"], "color": ["red", "blue"]}
    names = {
        "city": ParameterSpec(name="city"),
        "count": ParameterSpec(name="count", type="integer", allowed_values=[1, 2, 3]),
        "color": ParameterSpec(name="color", allowed_values=["red", "blue"]),
        "day": ParameterSpec(name="day", type="date"),
    }
    turn = _turn(
        "x",
        "Flowers_1",
        "OrderFlowers",
        "Send 2 red roses to New York",
        {"city": ["New York"], "count": ["2"], "color": ["red"]},
        [("city", 20, 28, "New York")],
    )
    assert bench.annotate(turn, names, categorical) == "Send [2](count) [red](color) roses to [New York](city)"
    # a value written twice is not marked; nor a slot the template does not declare
    twice = _turn("y", "Flowers_1", "OrderFlowers", "red and red", {"color": ["red"]}, [])
    assert bench.annotate(twice, names, categorical) == "red and red"
    assert bench.annotate(turn, {"count": names["count"]}, categorical) == "Send [2](count) red roses to New York"
    # a count written as a word is marked where the number reader sees it; a mark the server would refuse
    # at load (a date it cannot read) is left out
    words = _turn("z", "Flowers_1", "OrderFlowers", "two roses soon", {"count": ["2"]}, [("day", 10, 14, "soon")])
    assert bench.annotate(words, names, categorical) == "[two](count) roses soon"


def test_examples_prefer_spans_and_skip_markup() -> None:
    turns = [_spanned(f"d{i}", "S", f"City{i}") for i in range(10)]
    turns += [_turn(f"p{i}", "S", "OrderFlowers", f"flowers please {i}", {}, []) for i in range(10)]
    turns.append(_turn("m", "S", "OrderFlowers", "flowers [now]", {}, []))
    picked = bench.pick_examples(turns, 10, 0, "S.OrderFlowers")
    assert len(picked) == 10 and sum(bool(t.spans) for t in picked) == 7
    assert picked == bench.pick_examples(turns, 10, 0, "S.OrderFlowers")  # seeded
    assert all("[" not in t.utterance for t in bench.pick_examples(turns, 30, 0, "S.OrderFlowers"))


@pytest.mark.parametrize(
    ("spec", "value", "text", "golds", "expected"),
    [
        (ParameterSpec(name="city"), "New York", "new york", ["the New  York."], True),
        (ParameterSpec(name="city"), "San Francisco", "SF", ["SF"], True),  # the question's words
        (ParameterSpec(name="city"), "Boston", "Boston", ["New York", "NYC"], False),
        (ParameterSpec(name="d", type="date"), "2019-03-04", "Monday", ["next Monday"], True),
        (ParameterSpec(name="d", type="date"), "2019-03-05", "Tuesday", ["next Monday"], False),
        # the gold's two mentions meet on one day ("Thursday" and "next week": 2019-03-07) ...
        (ParameterSpec(name="d", type="date"), "2019-03-07", "Thursday", ["Thursday next week"], True),
        # ... or do not (today is a Friday: "Friday" is today, not in next week), so "Friday" alone is not it
        (ParameterSpec(name="d", type="date"), "2019-03-01", "Friday", ["Friday next week"], False),
        # a gold only partly read ("this month", not "8th") gives no typed value to match
        (ParameterSpec(name="d", type="date"), "2019-03-01", "this month", ["8th of this month"], False),
        (ParameterSpec(name="n", type="integer", allowed_values=[1, 2]), 2, "two", ["2"], True),
        (ParameterSpec(name="b", type="boolean"), True, "with wifi", ["True"], True),
        (ParameterSpec(name="b", type="boolean"), False, "no wifi", ["True"], False),
    ],
)
def test_value_rule(spec: ParameterSpec, value: object, text: str, golds: list[str], expected: bool) -> None:
    assert bench.value_matches(spec, value, text, golds, TODAY) is expected
