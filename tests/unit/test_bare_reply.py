"""Which parameter a bare reply to a clarification answers, and with what words (conversations/bare_reply.py)."""

from __future__ import annotations

import pytest

from server.conversations.bare_reply import bare_value
from server.testing.templates import template

CITY = {"name": "city", "type": "string", "required": True}
VENUE = {"name": "venue", "type": "string", "required": True}
DAY = {"name": "day", "type": "date", "required": True}
SIZE = {"name": "size", "type": "string", "required": True, "allowed_values": ["small", "large"]}
WEATHER = template(
    CITY, DAY, tid="weather", examples=["check the weather in [Paris](city)", "forecast for [Rome](city)"]
)
ALARMS = template(tid="alarms", examples=["what time is my alarm", "show my alarms"])


def _read(message: str, *wanted: dict, confident: bool = False, read=()) -> tuple[str, str] | None:
    specs = [p for p in WEATHER.parameters if p.name in {w["name"] for w in wanted}]
    specs += [template(w).parameters[0] for w in wanted if w["name"] not in {p.name for p in specs}]
    found = bare_value(message, specs, WEATHER, [WEATHER, ALARMS], confident, read)
    return None if found is None else (found[0].name, found[1])


@pytest.mark.parametrize(
    ("message", "value"),
    [
        ("Glen Ellen", "Glen Ellen"),
        ("Check Glen Ellen.", "Glen Ellen"),  # 'check': the template's own word
        ("For CDMX.", "CDMX"),
        ("Some Szechuan would be great!", "Szechuan"),
        ("What about Glen Ellen?", "Glen Ellen"),
        ("1900 University Ave", "1900 University Ave"),
        ("Sorry, Bolinas", "Bolinas"),
        ("what time is it", None),  # another template's words
        ("Tell me a joke", None),  # a lower-case word where the reply capitalises names
        ("asado is to die for", None),  # words apart
        ("6", None),  # a number
        ("San Luis Obispo County", None),  # more words than a bare name
        ("please", None),
        ("never mind", None),  # words that give no value
        ("Not Boston", None),
        ("idk", None),
        ("Hi there", None),
        ("Next week", None),
        ("%s %d {city}", None),  # not how a name is written
    ],
)
def test_one_free_text_value_asked(message, value):
    assert _read(message, CITY) == (None if value is None else ("city", value))


def test_a_date_asked_beside_it_leaves_the_name_to_the_city():
    assert _read("Glen Ellen", CITY, DAY) == ("city", "Glen Ellen")


def test_two_free_text_values_asked_leave_a_bare_name_unplaced():
    assert _read("Glen Ellen", CITY, VENUE) is None


def test_words_a_reader_took_are_no_name():
    assert _read("Glen Ellen on Sunday", CITY, read=[(14, 20)]) == ("city", "Glen Ellen")
    assert _read("Sunday", CITY, read=[(0, 6)]) is None


def test_a_confident_message_gives_free_text_only_when_it_is_the_value_alone():
    """A lone name asks nothing of another template, however well it routes there; with other words it may
    be a question of its own."""
    assert _read("Glen Ellen", CITY, confident=True) == ("city", "Glen Ellen")
    assert _read("Yep, it's Glen Ellen.", CITY, confident=True) == ("city", "Glen Ellen")
    assert _read("Look in Glen Ellen.", CITY, confident=True) == ("city", "Glen Ellen")
    assert _read("I'd like Glen Ellen", CITY, confident=True) == ("city", "Glen Ellen")
    assert _read("Tell me about Glen Ellen", CITY, confident=True) is None


@pytest.mark.parametrize(
    ("message", "value"),
    [
        ("Search around Glen Ellen", "Glen Ellen"),  # a looking word before a place sends the search there
        ("Search Party", "Search Party"),  # ... and is part of a name anywhere else
        ("Looking for Alaska", None),  # 'for' is filler: 'Looking' and 'Alaska' stand apart, and neither is taken
    ],
)
def test_a_looking_word_is_set_aside_only_before_a_place(message, value):
    assert _read(message, CITY) == (None if value is None else ("city", value))


def test_closed_list_one_word_even_when_confident():
    assert _read("large", SIZE, confident=True) == ("size", "large")
    assert _read("very large please", SIZE, confident=True) is None  # two words and confident
    assert _read("size 3", SIZE) is None  # digits are no listed name


def test_a_question_keeps_its_words():
    """'... cool things to do in philly?' names no city: the words a template uses stay in a question, so
    'philly' does not stand alone (it would, were they set aside as in a statement)."""
    outings = template(tid="outings", examples=["can you show me some cool things to do"])
    city = template(CITY).parameters
    asked = "can you show me some cool things to do in philly?"
    assert bare_value(asked, city, WEATHER, [outings], False) is None
    assert bare_value(asked.rstrip("?"), city, WEATHER, [outings], False) == (city[0], "philly")
