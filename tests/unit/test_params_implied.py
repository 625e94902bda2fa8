"""Values a question means by a word that is not the value (params/implied.py): an example may state what it
means beyond its marks (`{text: ..., values: {...}}`), and the words that go with one value are learned from
those statements; the entry is checked at load like a mark, at its file and line."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from server.config.errors import ConfigError
from server.params.extractor import TemplateParameterExtractor
from server.params.implied import learn
from server.params.settings import ParameterExtractionSettings
from server.runtime.loader import load_config
from server.templates import Template
from server.testing.configs import make_tree

CATEGORY = {"name": "category", "type": "string", "required": True, "allowed_values": ["Music", "Sports"]}
KIDS = {"name": "good_for_kids", "type": "boolean"}


def _events(*examples: object, params: tuple[dict, ...] = (CATEGORY, {"name": "city"})) -> Template:
    return Template.model_validate(
        {"id": "events", "description": "Find events", "nl_examples": list(examples), "parameters": list(params),
         "body_key": "sql", "body": "SELECT 1"}
    )  # fmt: skip


def _said(text: str, **values: object) -> dict:
    return {"text": text, "values": values}


EVENTS = _events(
    _said("any concerts this weekend?", category="Music"),
    _said("a concert in [Oakland](city)", category="Music"),
    _said("is there a concert on Friday", category="Music"),
    _said("concerts near me", category="Music"),
    _said("I like baseball games", category="Sports"),
    _said("find some games in [Denver](city)", category="Sports"),
    _said("games this Sunday please", category="Sports"),
    "find me something to do",
    "what is on in [Boston](city)",
)


def test_an_entry_with_values_is_its_text_with_the_values_aside():
    t = _events(_said("a [rock](city) concert", category="Music"), "plain")
    assert t.nl_examples == ["a rock concert", "plain"]
    assert t.example_values == ((("category", "Music"),), ())
    assert [s.parameter for s in t.example_spans[0]] == ["city"]


def test_words_that_go_with_one_value_are_learned():
    assert learn([EVENTS]) == {"category": {"concert": "Music", "game": "Sports"}}


PLAIN = [f"what is on in [{city}](city)" for city in ("Boston", "Denver", "Austin", "Miami", "Dallas", "Reno")]


def test_a_marked_value_says_nothing_of_the_other_words():
    """Four marked Music examples say 'available' and 'concert': counted as examples without a stated value,
    they would keep 'concert' below nine in ten; counted as Music, 'available' would point at it."""
    marked = _events(
        *[f"a [Music](category) concert or a gig available {w}" for w in ("now", "today", "soon", "tonight")],
        _said("any concerts?", category="Music"),
        _said("a concert please", category="Music"),
        _said("concert tickets", category="Music"),
        *PLAIN,
    )
    lexicon = learn([marked])["category"]
    assert "available" not in lexicon and lexicon["concert"] == "Music"


def test_a_word_needs_two_sightings_and_nine_in_ten_of_its_examples():
    t = _events(
        _said("an opera", category="Music"),  # seen once: not learned
        _said("a gig in [Oslo](city)", category="Music"),
        _said("a gig tonight", category="Music"),
        "a gig about cars",  # 'gig': 2 of 3 with Music, not 9 in 10
        *[f"plans {i}x" for i in range(60)],  # Music is rare: chance alone would let both through
    )
    assert learn([t]).get("category", {}) == {}


def test_the_values_own_words_are_left_to_the_list_reader():
    t = _events(*[_said(f"music {w}", category="Music") for w in ("tonight", "today", "soon")], *PLAIN)
    assert "music" not in learn([t])["category"]


def test_yes_and_true_are_one_yes_no_value():
    t = _events(
        _said("child-friendly museums", good_for_kids=True),
        _said("something child-friendly", good_for_kids="yes"),
        _said("child-friendly parks", good_for_kids="true"),
        *PLAIN,
        params=(KIDS, {"name": "city"}),
    )
    assert learn([t]) == {"good_for_kids": {"child-friendly": True}}


def test_thousands_of_examples_of_one_word_learn_without_overflow():
    examples = [_said(f"a concert {i}x", category="Music") for i in range(2500)]
    big = _events(*examples, *[f"plans {i}x" for i in range(2500)])
    assert learn([big])["category"]["concert"] == "Music"


def test_an_array_is_not_learned():
    genres = {"name": "genres", "type": "array", "item_type": "string", "allowed_values": ["Rock", "Jazz"]}
    t = _events(*[_said(f"guitar {w}", genres=["Rock"]) for w in ("solos", "bands", "music")], params=(genres,))
    assert learn([t]) == {}


def test_a_word_seen_with_a_value_as_often_as_chance_would_is_not_learned():
    """Two of three examples are Music: 'tonight' in both of them says nothing."""
    t = _events(
        _said("concerts tonight", category="Music"),
        _said("music tonight", category="Music"),
        _said("games", category="Sports"),
    )
    assert "tonight" not in learn([t]).get("category", {})


async def _extract(question: str, template: Template = EVENTS):
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 6, 1))
    await extractor.prepare([template])
    return await extractor.extract(question, template)


@pytest.mark.parametrize(
    ("question", "category"),
    [
        ("is there a concert tomorrow?", "Music"),  # answered, where 'which category?' was asked
        ("any games near Boston", "Sports"),
        ("Music events in Boston", "Music"),  # the list's own word: the list reader
        ("concerts or games?", None),  # two values: none, asked
        ("no concerts please", None),  # ruled out, as a value would be
        ("I don't want games", None),
        ("something fun", None),
    ],
)
async def test_the_word_gives_the_value_a_question_leaves_unsaid(question, category):
    got = await _extract(question)
    assert got.values.get("category") == category
    implied = [t for t in got.trace if t.extractor == "implied"]
    assert len(implied) == (1 if category and question != "Music events in Boston" else 0)
    if category is None:
        assert [p.name for p in got.problems] == ["category"]


async def test_a_yes_no_value_is_learned_too():
    t = _events(
        _said("a child-friendly museum", good_for_kids=True),
        _said("child-friendly things to do in [Paris](city)", good_for_kids=True),
        _said("somewhere child-friendly please", good_for_kids=True),
        "museums in [Rome](city)",
        "things to do",
        "what is fun here",
        "parks in [Oslo](city)",
        "a quiet afternoon",
        "somewhere to go tonight",
        params=(KIDS, {"name": "city"}),
    )
    got = await _extract("any child-friendly attractions?", t)
    assert got.values["good_for_kids"] is True
    spaced = await _extract("something child friendly please", t)  # the same word with a space
    assert spaced.values["good_for_kids"] is True and spaced.trace[0].text == "child friendly"


ADAPTER = """
adapters:
  - name: e
    type: sql
    connection: {url: 'sqlite:///:memory:'}
    templates: ['templates/*.yaml']
"""


def _tree(tmp_path: Path, entries: list[str]) -> Path:
    """A config whose one template lists `entries` from line 5 of templates/t.yaml."""
    library = (
        "templates:\n  - id: events\n    description: find events\n    nl_examples:\n"
        + "".join(f"      - {e}\n" for e in entries)
        + "    parameters:\n      - {name: category, allowed_values: [Music, Sports]}\n"
        "      - {name: kids, type: boolean}\n"
        "    sql: 'SELECT :category, :kids'\n"
    )
    return make_tree(tmp_path, "stats: {enabled: false}\n", {"a.yaml": ADAPTER}, {"t.yaml": library})


def test_stated_values_are_checked_at_load_with_file_and_line(tmp_path):
    config = _tree(
        tmp_path,
        [
            "{text: 'any concerts?', values: {category: Music}}",  # line 5: fine
            "{text: 'any concerts?', values: {categry: Music}}",  # line 6: no such parameter
            "{text: 'any plays?', values: {category: Theatre}}",  # line 7: not an allowed value
            "{text: 'for kids', values: {kids: maybe}}",  # line 8: not a yes/no
        ],
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    found = {(i.file, i.line): i.message for i in caught.value.issues}
    assert set(found) == {("templates/t.yaml", n) for n in (6, 7, 8)}
    assert "no parameter 'categry'" in found[("templates/t.yaml", 6)]
    assert "'Theatre'" in found[("templates/t.yaml", 7)] and "'maybe'" in found[("templates/t.yaml", 8)]


def test_an_entry_of_another_shape_is_named_with_its_line(tmp_path):
    config = _tree(tmp_path, ["'fine'", "{text: 'games', vals: {category: Sports}}"])
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    (issue,) = caught.value.issues
    assert (issue.file, issue.line) == ("templates/t.yaml", 6)
    assert "{text: ..., values: {parameter: value}}" in issue.message


def test_a_learned_model_does_not_drop_the_implied_value():
    """The learned extractor, sure that 'concert' is no value, drops a guess there but not the implied value."""
    from server.params.candidates import Candidate
    from server.params.learned.evidence import Judged, weigh
    from server.params.learned.tagger import Tagging
    from server.params.text import words

    question = "a concert"
    toks = words(question)
    index = {"O": 0, "B-category": 1, "I-category": 2}
    tagging = Tagging(["O", "O"], np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]), index)
    spec = EVENTS.parameters[0].model_copy(update={"required": False})
    implied = Candidate("category", "Music", (2, 9), "concert", "implied", 0.6, cued=True)
    guess = Candidate("category", "Music", (2, 9), "concert", "fuzzy", 0.6)
    judged = [Judged(spec, None, [implied, guess])]
    weigh(judged, tagging, toks, question, dt.date(2025, 6, 1), frozenset({"category"}))
    assert judged[0].candidates == [implied]
