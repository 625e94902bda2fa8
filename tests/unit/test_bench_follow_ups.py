"""scripts/bench_follow_ups.py: which values count as said, how a second answer is scored, how controls pair.

Hand-made rows and answers stand in for SGD and the server (no server is started: the benchmark does that)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from server.routing.composite import CompositeAdapterSettings
from server.runtime.loader import load_config
from server.testing.scripts import load_script
from server.testing.templates import template

bench = load_script("bench_follow_ups")
slots = bench.slots

RESERVE = template(
    {"name": "restaurant_name", "required": True},
    {"name": "location", "required": True},
    {"name": "date", "type": "date", "required": False},
    {"name": "number_of_seats", "type": "integer", "allowed_values": [1, 2, 3, 4], "required": False},
    tid="Restaurants_2.ReserveRestaurant",
)
PARAMETERS = {p.name for p in RESERVE.parameters}
CATEGORICAL = {"number_of_seats"}


def _row(
    previous: str,
    previous_values: dict[str, list[str]],
    utterance: str,
    changed: dict[str, list[str]],
    spans: tuple[tuple[str, str], ...] = (),
    *,
    dialogue: str = "1_00001",
    service: str = "Restaurants_2",
    intent: str = "ReserveRestaurant",
) -> Any:
    """A row; spans given as (slot, text) and placed where the text first occurs in the utterance."""
    placed = []
    for slot, text in spans:
        start = utterance.index(text)
        placed.append(slots.Span(slot, start, start + len(text), text))
    return bench.FollowUpRow(
        dialogue,
        4,
        service,
        intent,
        previous,
        previous_values,
        utterance,
        {**previous_values, **changed},
        changed,
        tuple(placed),
    )


# --- which values count ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text", "count", "expected"),
    [
        ("San Jose", "find restaurants in san jose please", False, True),
        ("2", "a table for 2", False, True),
        ("2", "a table for 12", False, False),  # a whole word only
        ("2", "a table for two", False, False),
        ("2", "a table for two", True, True),  # a count where the number reader sees it
        ("Sino", "Sinology", False, False),
        ("dontcare", "I dontcare", False, False),  # never a value
        ("", "anything", False, False),
    ],
)
def test_said(value: str, text: str, count: bool, expected: bool) -> None:
    assert bench.said(value, text, count=count) is expected


def test_changed_values_count_only_when_the_user_said_them() -> None:
    row = _row(
        "Book a table at Sino for 2 people.",
        {"restaurant_name": ["Sino"], "number_of_seats": ["2"], "location": ["San Jose"]},
        "Make it three people in Campbell on the 4th, price range cheap.",
        {
            "location": ["Campbell"],  # a span: counts
            "number_of_seats": ["3"],  # categorical, said as "three": counts
            "date": ["4th of March"],  # no span (the system's words): does not count, though "4th" is there
            "price_range": ["cheap"],  # said, but not a parameter of the template
        },
        (("location", "Campbell"), ("price_range", "cheap")),
    )
    expected = bench.expected_values(row, PARAMETERS, CATEGORICAL)
    assert expected.changed == {"location": ["Campbell"], "number_of_seats": ["3"]}
    # restaurant_name said before and not changed: carried; number_of_seats and location changed: not carried
    assert expected.carried == {"restaurant_name": ["Sino"]}


def test_a_row_whose_changes_come_from_the_system_is_not_answerable() -> None:
    row = _row(
        "I want to eat at Sino in San Jose.",
        {"restaurant_name": ["Sino"], "location": ["San Jose"]},
        "Yup! You're right.",
        {"location": ["San Jose, CA"], "number_of_seats": ["2"], "date": ["dontcare"]},
    )
    expected = bench.expected_values(row, PARAMETERS, CATEGORICAL)
    assert expected.changed == {}
    assert expected.carried == {"restaurant_name": ["Sino"]}  # location changed (by the system): not carried


def test_categorical_text_must_occur_and_dontcare_never_counts() -> None:
    row = _row(
        "Book Sino for 2.",
        {"restaurant_name": ["Sino"], "number_of_seats": ["2", "dontcare"]},
        "Any date is fine, for 4 people.",
        {"number_of_seats": ["4"], "date": ["dontcare"]},
    )
    expected = bench.expected_values(row, PARAMETERS, CATEGORICAL)
    assert expected.changed == {"number_of_seats": ["4"]}
    row = _row("Book Sino.", {"restaurant_name": ["Sino"]}, "Sounds good.", {"number_of_seats": ["4"]})
    assert bench.expected_values(row, PARAMETERS, CATEGORICAL).changed == {}


def test_carried_keeps_every_acceptable_text_and_drops_dontcare() -> None:
    row = _row(
        "A table at Sino at half past 11 in the morning.",
        # number_of_seats came from an earlier turn (not said in this previous utterance): not carried
        {"restaurant_name": ["Sino", "Sino Restaurant"], "location": ["dontcare"], "number_of_seats": ["2"]},
        "In Campbell.",
        {"location": ["Campbell"]},
        (("location", "Campbell"),),
    )
    assert bench.expected_values(row, PARAMETERS, CATEGORICAL).carried == {
        "restaurant_name": ["Sino", "Sino Restaurant"]
    }


# --- scoring an answer -----------------------------------------------------------------------------------


def _body(tid: str | None, reason: str, parameters: dict[str, Any], **session: Any) -> dict[str, Any]:
    return {
        "content": "",
        "rows": [],
        "metadata": {
            "template_id": tid,
            "reason": reason,
            "parameters": parameters,
            "session": {"session_id": "s", "turn": 2, **session},
            "extraction": [{"name": k, "value": v, "extractor": "x", "text": str(v)} for k, v in parameters.items()],
        },
    }


FIRST = _body(RESERVE.id, "highest_combined_score_above_threshold", {"restaurant_name": "Sino", "date": "2019-03-02"})
ROW = _row(
    "A table at Sino tomorrow.",
    {"restaurant_name": ["Sino"], "date": ["tomorrow"]},
    "Make it Campbell for 3.",
    {"location": ["Campbell"], "number_of_seats": ["3"]},
    (("location", "Campbell"),),
)


def _score(second: dict[str, Any], first: dict[str, Any] = FIRST) -> Any:
    expected = bench.expected_values(ROW, PARAMETERS, CATEGORICAL)
    exchange = bench.Exchange(bench.read_reply(200, first, 10.0), bench.read_reply(200, second, 12.0))
    return bench.score_row("seen", ROW, expected, exchange, RESERVE)


def test_a_follow_up_that_keeps_the_frame() -> None:
    values = {"restaurant_name": "Sino", "date": "2019-03-02", "location": "Campbell", "number_of_seats": 3}
    verdict = _score(
        _body(RESERVE.id, "follow_up", values, follow_up="follow_up", changed=["location", "number_of_seats"])
    )
    assert verdict.expected.carried == {"restaurant_name": ["Sino"], "date": ["tomorrow"]}
    assert verdict.kept and verdict.changed_right and verdict.carried_right and verdict.frame_right
    assert verdict.continued and not verdict.wrong_new_question
    assert verdict.server_named_changed is True  # it named both changed slots


def test_a_carried_value_dropped_or_wrong_is_not_carried_right() -> None:
    dropped = _score(
        _body(RESERVE.id, "follow_up", {"location": "Campbell", "number_of_seats": 3, "date": "2019-03-02"})
    )
    assert dropped.changed_right and not dropped.carried_right and not dropped.frame_right
    assert dropped.carried_ok == {"restaurant_name": False, "date": True}
    # "tomorrow" read against the pinned today (2019-03-01) is 2019-03-02: another day is wrong
    wrong_day = {"restaurant_name": "Sino", "date": "2019-03-05", "location": "Campbell", "number_of_seats": 3}
    assert not _score(_body(RESERVE.id, "follow_up", wrong_day)).carried_right
    assert _score(_body(RESERVE.id, "follow_up", wrong_day, changed="location")).server_named_changed is None


def test_an_old_value_kept_in_place_of_the_change_is_not_changed_right() -> None:
    kept_old = {"restaurant_name": "Sino", "date": "2019-03-02", "location": "San Jose", "number_of_seats": 3}
    verdict = _score(_body(RESERVE.id, "follow_up", kept_old, follow_up="follow_up", changed=["number_of_seats"]))
    assert verdict.changed_ok == {"location": False, "number_of_seats": True}
    assert not verdict.changed_right and not verdict.frame_right
    assert verdict.server_named_changed is False


def test_values_on_the_wrong_template_count_for_nothing() -> None:
    values = {"restaurant_name": "Sino", "date": "2019-03-02", "location": "Campbell", "number_of_seats": 3}
    verdict = _score(_body("Restaurants_2.FindRestaurants", "highest_combined_score_above_threshold", values))
    assert not verdict.kept and not verdict.changed_right and not verdict.carried_right
    assert not any(verdict.changed_ok.values()) and not any(verdict.carried_ok.values())
    assert not verdict.continued and verdict.wrong_new_question  # the first turn had it; the new question lost it
    # a first turn that was already wrong had nothing to lose
    first_wrong = _body("Restaurants_2.FindRestaurants", "highest_combined_score_above_threshold", {})
    assert not _score(_body("Restaurants_2.FindRestaurants", "x", values), first_wrong).wrong_new_question


def test_a_new_question_on_the_right_template_is_scored_on_its_values() -> None:
    # today's code: the follow-up routes as a new question to the right template and carries nothing
    verdict = _score(
        _body(RESERVE.id, "highest_combined_score_above_threshold", {"location": "Campbell", "number_of_seats": 3})
    )
    assert verdict.kept and verdict.changed_right and not verdict.carried_right
    assert not verdict.continued and not verdict.wrong_new_question


def test_a_completed_clarification_is_a_follow_up() -> None:
    body = _body(RESERVE.id, "clarification_answered", {"location": "Campbell"}, follow_up="clarification")
    assert _score(body).continued
    body["metadata"]["reason"] = "something_else"
    assert _score(body).continued  # the session's follow_up field says so too


@pytest.mark.parametrize(
    "body",
    [None, [], {"metadata": None}, {"metadata": {"session": "x", "parameters": [], "extraction": {}}}, {"error": {}}],
)
def test_replies_without_the_fields_read_as_empty(body: Any) -> None:
    reply = bench.read_reply(500, body, 1.0)
    assert reply.template is None and reply.parameters == {} and reply.trace == [] and not reply.continues


def test_template_from_composite_routing_when_metadata_has_none() -> None:
    body = {"metadata": {"composite_routing": {"template_id": "a.b", "reason": "ambiguous"}}}
    reply = bench.read_reply(200, body, 1.0)
    assert reply.template == "a.b" and reply.reason == "ambiguous"


def test_summary_counts_only_answerable_rows_in_the_main_figures() -> None:
    good = _score(
        _body(
            RESERVE.id,
            "follow_up",
            {"restaurant_name": "Sino", "date": "2019-03-02", "location": "Campbell", "number_of_seats": 3},
        )
    )
    unanswerable_row = _row("Book Sino.", {"restaurant_name": ["Sino"]}, "Yes please.", {"location": ["Campbell"]})
    expected = bench.expected_values(unanswerable_row, PARAMETERS, CATEGORICAL)
    other = bench.score_row(
        "seen",
        unanswerable_row,
        expected,
        bench.Exchange(bench.read_reply(200, FIRST, 1.0), bench.read_reply(200, _body(None, "no_match", {}), 1.0)),
        RESERVE,
    )
    out = bench.summarise([good, other], [])
    assert out["rows"] == 2 and out["answerable_rows"] == 1
    assert out["frame_right"] == 1.0 and out["treated_as_follow_up"] == 1.0
    assert out["other_rows"]["rows"] == 1 and out["other_rows"]["treated_as_new"] == 1.0
    assert out["control"]["questions"] == 0 and out["control"]["control_wrong_follow_up"] is None


# --- controls and splits ---------------------------------------------------------------------------------


def _first(dialogue: str, service: str, intent: str) -> Any:
    return slots.Turn(dialogue, service, intent, f"{intent} please", {}, ())


def test_controls_pair_with_another_intent_of_another_dialogue() -> None:
    rows = [
        _row("Find me food.", {}, "In Campbell.", {}, dialogue="9_00001", intent="FindRestaurants"),
        _row("Book Sino.", {}, "For 2.", {}, dialogue="9_00002", intent="ReserveRestaurant"),
        _row("Fly to Boston.", {}, "On Monday.", {}, dialogue="9_00003", service="Flights_1", intent="SearchFlight"),
    ]
    firsts = [
        ("seen", _first("9_00004", "Restaurants_2", "ReserveRestaurant")),  # even: same service, other intent
        ("seen", _first("9_00005", "Restaurants_2", "ReserveRestaurant")),  # odd: another service
        ("unseen", _first("9_00001", "Restaurants_2", "ReserveRestaurant")),  # same service only in its own dialogue
        ("seen", _first("9_00006", "Flights_1", "SearchFlight")),  # no other intent in its service
    ]
    pairs = bench.pair_controls(firsts, rows, seed=0)
    assert [(p.previous.dialogue_id, p.same_service) for p in pairs[:3]] == [
        ("9_00001", True),
        ("9_00003", False),
        ("9_00003", False),
    ]
    assert pairs[3].previous.service == "Restaurants_2" and not pairs[3].same_service
    for pair in pairs:
        assert pair.previous.dialogue_id != pair.turn.dialogue_id
        assert (pair.previous.service, pair.previous.intent) != (pair.turn.service, pair.turn.intent)
    assert [p.split for p in pairs] == ["seen", "seen", "unseen", "seen"]
    assert bench.pair_controls(firsts, list(reversed(rows)), seed=0) == pairs  # seeded, file order aside


def test_a_control_read_as_a_follow_up_is_counted() -> None:
    pair = bench.ControlPair("seen", _first("9_00004", "Banks_1", "CheckBalance"), ROW, False)
    first = bench.read_reply(200, FIRST, 1.0)
    taken = bench.read_reply(200, _body(RESERVE.id, "clarification_answered", {}, follow_up="clarification"), 1.0)
    new = bench.read_reply(200, _body("Banks_1.CheckBalance", "highest_combined_score_above_threshold", {}), 1.0)
    wrong = bench.score_control(pair, bench.Exchange(first, taken))
    right = bench.score_control(pair, bench.Exchange(first, new))
    assert wrong.wrong_follow_up and not wrong.template_right
    assert not right.wrong_follow_up and right.template_right
    out = bench.control_summary([wrong, right])
    assert out["control_wrong_follow_up"] == 0.5 and out["other_service_wrong_follow_up"] == 0.5
    assert out["same_service_pairs"] == 0 and out["same_service_wrong_follow_up"] is None


def test_unseen_rows_from_the_example_half_are_left_out() -> None:
    ids = [f"5_{i:05d}" for i in range(40)]
    halves = {i: slots.example_half(i) for i in ids}
    assert set(halves.values()) == {True, False}
    for dialogue, in_examples in halves.items():
        row = _row("a", {}, "b", {}, dialogue=dialogue, service="Buses_3")
        assert bench.row_split(row, {"Restaurants_2"}) == (None if in_examples else "unseen")
        assert bench.row_split(row, {"Buses_3"}) == "seen"


def test_a_carried_value_keeps_the_words_of_the_first_trace() -> None:
    row = _row(
        "A table at Sino in Seattle.",
        {"restaurant_name": ["Sino"], "location": ["Seattle"]},
        "For 3.",
        {"number_of_seats": ["3"]},
    )
    expected = bench.expected_values(row, PARAMETERS, CATEGORICAL)
    first = _body(RESERVE.id, "x", {"restaurant_name": "Sino"})
    first["metadata"]["extraction"].append({"name": "location", "value": "Seattle, WA", "text": "Seattle"})
    values = {"restaurant_name": "Sino", "location": "Seattle, WA", "number_of_seats": 3}
    second = bench.read_reply(200, _body(RESERVE.id, "follow_up", values), 1.0)
    second.trace = [s for s in second.trace if s["name"] != "location"]  # the second trace has no step for it
    verdict = bench.score_row("seen", row, expected, bench.Exchange(bench.read_reply(200, first, 1.0), second), RESERVE)
    assert verdict.carried_ok == {"restaurant_name": True, "location": True}
    # the words belong to that value only: another final value does not borrow them
    second.parameters["location"] = "Seattle Heights"
    verdict = bench.score_row("seen", row, expected, bench.Exchange(bench.read_reply(200, first, 1.0), second), RESERVE)
    assert verdict.carried_ok["location"] is False


def test_an_expired_pending_question_is_not_a_follow_up() -> None:
    body = _body(None, "pending_template_gone", {}, follow_up="expired")
    assert not bench.read_reply(200, body, 1.0).continues


def test_no_follow_ups_turns_the_composite_key_off(tmp_path: Path) -> None:
    service = {
        "service_name": "Flowers_1",
        "description": "Order flowers",
        "slots": [{"name": "city", "description": "City", "is_categorical": False, "possible_values": []}],
        "intents": [
            {"name": "Order", "description": "Order flowers", "required_slots": ["city"], "optional_slots": {}}
        ],
    }
    turn = slots.Turn("1_00000", "Flowers_1", "Order", "Send flowers to Boston", {"city": ["Boston"]}, ())
    plan = slots.plan_from({"Flowers_1": service}, {"Flowers_1": service}, [turn], [turn])
    config_dir, _ = slots.build_tree(tmp_path / "tree", plan, 5, 0, False, tmp_path / "cache")

    def follow_ups() -> bool:
        composite = next(a for a in load_config(config_dir).adapters if a.name == slots.COMPOSITE)
        assert isinstance(composite, CompositeAdapterSettings)
        return composite.follow_ups

    assert follow_ups() is True  # the server's default
    bench.turn_follow_ups_off(config_dir)
    assert follow_ups() is False
