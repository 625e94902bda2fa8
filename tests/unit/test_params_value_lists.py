"""Closed lists under the parameter's own rules: `match: exact`, `partial: false`, codes and aliases from a
values_from list's second column, everyday-word codes as weak guesses, the template's ordinary words,
and a list over its max_values."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from server.adapters.base import QueryResult
from server.params.choices import Phrase, _case_sensitive, _occurrences, _pattern
from server.params.extractor import TemplateParameterExtractor
from server.params.settings import ParameterExtractionSettings
from server.params.value_list import ValueList
from server.params.values_from import TooManyValues
from server.templates import ParameterSpec
from server.testing.templates import template

TODAY = dt.date(2025, 12, 31)


class ListRunner:
    """A values_from source listing fixed rows (a name, and maybe a code) and counting its queries."""

    def __init__(self, names: list[str], codes: dict[str, str] | None = None) -> None:
        self.rows = [{"name": n, "code": (codes or {}).get(n)} for n in names]
        self.calls = 0

    async def __call__(self, query_id: str, raw_query: Any, max_rows: int) -> QueryResult:
        self.calls += 1
        return QueryResult(self.rows[:max_rows], ["name", "code"], truncated=len(self.rows) > max_rows)


def listed(name: str, required: bool = True, **extra: Any) -> dict:
    return {"name": name, "required": required, "values_from": {"query": "SELECT name, code FROM x"}, **extra}


def extractor(runner: ListRunner, **settings: Any) -> TemplateParameterExtractor:
    ex = TemplateParameterExtractor(ParameterExtractionSettings(**settings), today=lambda: TODAY)
    ex.bind_values_runner(runner)
    return ex


# --- match and partial ----------------------------------------------------------------------------------
DEPARTMENTS = ["Engineering", "Sales", "HR"]


async def test_match_exact_turns_misspellings_off():
    fuzzy = template({"name": "department", "required": True, "allowed_values": DEPARTMENTS})
    exact = template({"name": "department", "required": True, "allowed_values": DEPARTMENTS, "match": "exact"})
    ex = extractor(ListRunner([]))
    assert (await ex.extract("who is in enginering", fuzzy)).values == {"department": "Engineering"}
    strict = await ex.extract("who is in enginering", exact)
    assert "department" not in strict.values and strict.problems[0].problem == "missing"
    assert (await ex.extract("who is in engineering", exact)).values == {"department": "Engineering"}
    assert (await ex.extract("which engineers", exact)).values == {}  # singular/plural is not a misspelling:
    assert (await ex.extract("sales staff", exact)).values == {"department": "Sales"}  # ... nor case


async def test_partial_false_turns_distinctive_word_matches_off():
    names = ["Tesla Inc.", "Orion Data Systems"]
    loose = extractor(ListRunner(names))
    assert (await loose.extract("orders from Tesla", template(listed("customer")))).values == {"customer": "Tesla Inc."}
    whole = extractor(ListRunner(names))
    got = await whole.extract("orders from Tesla", template(listed("customer", partial=False)))
    assert got.values == {"customer": "Tesla"}  # free text, not the listed name
    assert (await whole.extract("orders from tesla inc.", template(listed("customer", partial=False)))).values == {
        "customer": "Tesla Inc."
    }


def test_match_and_partial_need_a_list_to_apply_to():
    with pytest.raises(ValidationError, match="match applies to parameters with allowed_values"):
        ParameterSpec(name="city", match="exact")
    with pytest.raises(ValidationError, match="partial applies to parameters with values_from"):
        ParameterSpec(name="city", allowed_values=["Paris"], partial=False)
    with pytest.raises(ValidationError, match="Input should be 'exact' or 'fuzzy'"):
        ParameterSpec(name="city", allowed_values=["Paris"], match="loose")
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        ParameterSpec(name="city", values_from={"query": "SELECT 1", "max_values": 0})
    assert ParameterSpec(name="city", allowed_values=["Paris"], match="fuzzy").match == "fuzzy"


# --- the template's ordinary words ------------------------------------------------------------------------
async def test_a_word_the_examples_use_ordinarily_is_never_a_misspelt_or_partial_value():
    cities = extractor(ListRunner(["Brook", "Selmer", "Denver"]))
    city = listed("city", required=False, values_from={"query": "q", "strict": True})
    booking = template(city, examples=("book a table near [selmer](city)", "book a spot for two"))
    assert (await cities.extract("book a spot for ten tonight", booking)).values == {"city": None}
    assert (await cities.extract("book a table near brok", booking)).values == {"city": "Brook"}  # a misspelling
    assert (await cities.extract("book a table in Brook", booking)).values == {"city": "Brook"}  # written out
    without_examples = template(city)  # 'book' is also a word of the language (known_words.py): no misspelling
    assert (await cities.extract("book a spot for ten tonight", without_examples)).values == {"city": None}

    services = extractor(ListRunner(["Google Music", "Spotify", "Deezer"]))
    service = listed("service", required=False, values_from={"query": "q", "strict": True})
    playing = template(service, examples=("play some music on [spotify](service)", "play music"))
    assert (await services.extract("play the music that is newest", playing)).values == {"service": None}
    assert (await services.extract("play it on google", playing)).values == {"service": "Google Music"}


# --- codes and aliases from a second column ---------------------------------------------------------------
AIRLINES = ["Delta Air Lines", "United Airlines", "US Airways"]
CODES = {"Delta Air Lines": "DL", "United Airlines": "UA", "US Airways": "US"}


async def test_an_everyday_word_code_is_a_guess_that_only_fills_a_required_value_nothing_else_fills():
    ex = extractor(ListRunner(AIRLINES, CODES))
    required = template(listed("airline"), examples=("flights of [delta](airline)", "what airline is [UA](airline)"))
    guess = await ex.extract("what airline is us", required)
    assert guess.values == {"airline": "US Airways"}
    assert [(t.extractor, t.text, t.score) for t in guess.trace] == [("values_from_alias", "us", 0.5)]
    assert (await ex.extract("tell us about flights of delta", required)).values == {"airline": "Delta Air Lines"}
    assert (await ex.extract("flights of US", required)).trace[0].score == 0.96
    optional = template(listed("airline", required=False), examples=("flights of [delta](airline)",))
    assert (await ex.extract("tell us about flights", optional)).values == {"airline": None}
    ordinary = template(listed("airline"), examples=("tell us about flights of [delta](airline)",))
    asked = await ex.extract("tell us about flights", ordinary)  # 'us' is an ordinary word of this template
    assert asked.values == {} and asked.problems[0].problem == "missing"


async def test_a_code_that_is_a_function_word_reads_in_capitals_and_never_beats_a_name():
    ex = extractor(ListRunner(["Andorra", "France", "Spain"], {"Andorra": "AND", "France": "FRA"}))
    required = template(listed("country"), examples=("trips to [spain](country)",))
    assert (await ex.extract("trips to france and back", required)).values == {"country": "France"}
    assert (await ex.extract("trips to fra", required)).values == {"country": "France"}
    assert (await ex.extract("trips to AND", required)).values == {"country": "Andorra"}
    optional = template(listed("country", required=False), examples=("trips to [spain](country)",))
    assert (await ex.extract("trips and tours", optional)).values == {"country": None}


async def test_operator_written_values_keep_their_case_rule():
    """An everyday word in capitals written in allowed_values matches only in capitals; other capitals
    ('NEW') in any case."""
    t = template({"name": "condition", "required": True, "allowed_values": ["NEW", "USED", "AS"]})
    ex = extractor(ListRunner([]))
    assert (await ex.extract("show me new cars", t)).values == {"condition": "NEW"}
    assert (await ex.extract("cars sold as is", t)).values == {}
    assert (await ex.extract("cars sold AS is", t)).values == {"condition": "AS"}


async def test_a_strict_list_accepts_its_codes_and_maps_them_to_the_name():
    ex = extractor(ListRunner(AIRLINES, CODES))
    strict = template({**listed("airline"), "values_from": {"query": "q", "strict": True}})
    assert (await ex.extract("flights of ua", strict)).values == {"airline": "United Airlines"}
    (param,) = [await ex._param(strict, spec) for spec in strict.parameters]
    from server.params.extractor import validate

    assert validate(param, "dl") == "Delta Air Lines"  # what the LLM pass may answer
    assert param.strict_list == AIRLINES


def test_value_list_keeps_each_name_once_and_drops_aliases_that_name_two_values_or_are_values():
    rows = [
        {"name": "Georgia", "code": "GA"},
        {"name": "georgia", "code": "GEO"},  # the same value again (case aside): its code still names it
        {"name": "Georgia (country)", "code": "Georgia"},  # a value's own name: it names that value
        {"name": "Gabon", "code": "GA"},  # shared with Georgia: names neither
        {"name": None, "code": "XX"},
        {"code": "YY"},
        {"name": "Ghana", "code": "  "},
    ]
    got = ValueList.from_rows(rows, ["name", "code"])
    assert got.values == ("Georgia", "Georgia (country)", "Gabon", "Ghana")
    assert got.aliases == (("GEO", "Georgia"),)
    assert got.canonical("geo") == "Georgia" and got.canonical("GA") is None and got.canonical("ghana") == "Ghana"


# --- max_values -------------------------------------------------------------------------------------------
async def test_a_list_over_max_values_fetched_at_question_time_is_an_error_not_a_cut():
    ex = extractor(ListRunner([f"name {i}" for i in range(30)]))
    t = template(listed("customer", values_from={"query": "q", "max_values": 29}))
    with pytest.raises(TooManyValues) as caught:
        await ex.extract("orders of name 3", t)
    assert caught.value.status == 502
    assert caught.value.message == (
        "adapter 'values': values_from of t.customer: the query lists more than 29 rows (max_values); "
        "raise max_values or narrow the query"
    )
    ok = template(listed("customer", values_from={"query": "q", "max_values": 30}))
    assert (await ex.extract("orders of name 3", ok)).values == {"customer": "name 3"}


# --- the whole-word search ----------------------------------------------------------------------------------
_TEXT = st.text(alphabet="usitUSIT _-'.1é", max_size=12)


@given(phrase=_TEXT.filter(lambda t: t.strip() != ""), question=_TEXT, listed_=st.booleans())
def test_whole_word_search_finds_what_the_regex_finds(phrase, question, listed_):
    """The plain search used for ASCII text agrees with the whole-word regex it stands in for."""
    p = Phrase(phrase, phrase, "values_from" if listed_ else "allowed_values")
    lowered = question.lower() if question.isascii() else None
    ignore_case = listed_ or not _case_sensitive(phrase)
    expected = [m.span() for m in _pattern(phrase, ignore_case).finditer(question)]
    assert list(_occurrences(p, question, lowered)) == expected
