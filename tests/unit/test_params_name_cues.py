"""A value right after the word that names its parameter (params/name_cues.py): 'the album Voicenotes', 'the
song Lost Within', 'songs by Ellie Goulding', 'starring Don Hewitt', on the real extractor."""

from __future__ import annotations

import datetime as dt

import pytest

from server.params.candidates import Candidate
from server.params.extractor import TemplateParameterExtractor
from server.params.name_cues import named
from server.params.settings import ParameterExtractionSettings
from server.templates import Template


def _template(*names: str) -> Template:
    return Template.model_validate(
        {"id": "media", "description": "Find songs and movies", "nl_examples": ["find me some songs"],
         "parameters": [{"name": n} for n in names], "body_key": "sql", "body": "SELECT 1"}
    )  # fmt: skip


async def _values(question: str, *names: str) -> dict:
    template = _template(*names)
    extractor = TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2019, 3, 1))
    got = await extractor.extract(question, template)
    return {k: v for k, v in got.values.items() if v is not None}


@pytest.mark.parametrize(
    ("question", "names", "want"),
    [  # found on SGD's train-only services: each name went to the other parameter, or to none
        ("Could you find me some good songs in the album Halcyon by Ellie Goulding?", ("album", "artist"),
         {"album": "Halcyon", "artist": "Ellie Goulding"}),
        ("Can you find me songs from the Charlie Puth album Voicenotes?", ("artist", "album"),
         {"album": "Voicenotes", "artist": "Charlie Puth"}),
        ("please play the song Lost Within on my kitchen speaker", ("artist", "song_name"),
         {"song_name": "Lost Within"}),
        ("I'd like something directed by Iain Softley and starring Don Hewitt", ("starring", "director"),
         {"director": "Iain Softley", "starring": "Don Hewitt"}),
        ("events in the city of Philadelphia", ("event_name", "city"), {"city": "Philadelphia"}),
        # found on SGD: of two readings after 'by', the surer, not the longer
        ("movies directed by Peter Farrelly online", ("directed_by",), {"directed_by": "Peter Farrelly"}),
    ],
)  # fmt: skip
async def test_the_word_that_names_a_parameter_says_which_it_fills(question, names, want):
    assert await _values(question, *names) == want


async def test_a_word_of_the_name_elsewhere_says_nothing():
    """'song' far before the name, or 'by' for a parameter that makes nothing, leave the readers' reading."""
    assert await _values("find me some Adele songs", "album", "artist") == {"album": "Adele"}  # as before
    assert await _values("a hotel by Central Park", "hotel_name") == {"hotel_name": "Central Park"}
    # found by review: an ordinary noun after the words of the name is no value
    assert await _values("revenue by product category Electronics", "product") == {"product": "Electronics"}
    assert await _values("customer service calls from Acme Corp", "customer_name") == {"customer_name": "Acme Corp"}


def test_a_shorter_reading_inside_the_named_words_is_part_of_them():
    """Found on SGD's train-only services: 'songs in album Night Visions' gave the listed 'Visions', which a
    learned model's support raised above the cued 'Night Visions'."""
    question = "Could you find me some songs in album Night Visions?"
    start = question.index("Night")
    inner = Candidate("album", "Visions", (start + 6, start + 13), "Visions", "values_from", 0.97)
    whole = Candidate("album", "Night Visions", (start, start + 13), "Night Visions", "proper_name", 0.62)
    spec = _template("album").parameters[0]
    assert [(c.text, c.cued) for c in named(spec, question, [inner, whole])] == [("Night Visions", True)]
