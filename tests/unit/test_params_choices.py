"""Closed lists: allowed values, aliases, stored values; exact, partial and fuzzy matching with a floor."""

from __future__ import annotations

import pytest

from server.params.choices import ChoiceRules, find_choices, phrases_for, suggestions
from server.params.value_list import ValueList

DEPARTMENTS = ["Engineering", "Sales", "HR", "Marketing"]
ALIASES = {"engineers": "Engineering", "sales team": "Sales", "people team": "HR"}


def best(question: str, phrases, floor: float = 85.0):
    found = find_choices(question, phrases, ChoiceRules(floor=floor))
    return (found[0].value, found[0].extractor, found[0].text) if found else None


def test_exact_values_and_aliases_case_insensitive():
    phrases = phrases_for(DEPARTMENTS, ALIASES)
    assert best("who works in engineering?", phrases) == ("Engineering", "allowed_values", "engineering")
    assert best("list the Engineers", phrases) == ("Engineering", "alias", "Engineers")
    assert best("what does the people team do", phrases) == ("HR", "alias", "people team")
    assert best("who is in hr", phrases)[0] == "HR"


def test_singular_and_plural_match():
    phrases = phrases_for(["Laptops", "Monitors"], {})
    assert best("which laptop is cheapest", phrases)[0] == "Laptops"


def test_misspelling_above_the_floor_matches_and_below_does_not():
    phrases = phrases_for(DEPARTMENTS, {})
    value, extractor, text = best("what does the enginering team earn", phrases)
    assert (value, extractor, text) == ("Engineering", "fuzzy", "enginering")
    assert best("what does the engnring team earn", phrases, floor=95.0) is None
    assert best("what does the weather look like", phrases) is None


def test_a_misspelling_never_rests_on_a_function_word():
    """'a young' is 87.5% like 'mia young': the 'a' is an article, not a misspelt 'mia'."""
    phrases = phrases_for([], {}, ValueList.of(["Mia Young", "Ahmed Young", "Orion Data Systems"]))
    assert best("order history of a young customer", phrases) is None
    assert best("order history of mia yung", phrases)[:2] == ("Mia Young", "fuzzy")
    assert best("orders of orion data sytems", phrases)[:2] == ("Orion Data Systems", "fuzzy")


def test_capitalised_alias_that_is_a_common_word_needs_capitals():
    phrases = phrases_for(["United States", "Germany"], {"US": "United States"})
    assert best("customers in the US", phrases)[0] == "United States"
    assert best("tell us about customers", phrases) is None


def test_distinctive_words_of_stored_values():
    stored = ["Tesla Inc.", "Orion Data Systems", "Stonegate Engineering Ltd.", "Stonegate Software Studio"]
    phrases = phrases_for(None, {}, ValueList.of(stored))
    assert best("orders from Tesla", phrases)[:2] == ("Tesla Inc.", "partial_name")
    assert best("what did orion data buy", phrases)[0] == "Orion Data Systems"
    assert best("orders of stonegate", phrases) is None  # two customers share the word: not distinctive
    assert best("Tesla Inc. orders", phrases)[:2] == ("Tesla Inc.", "values_from")


def test_a_distinctive_word_inside_another_capitalised_name_names_nothing():
    """'San' of 'San Diego' is not 'San Francisco' when the list holds no San Diego; 'Art' of 'Modern Art' is
    not 'Cartoon Art Museum'. A capital that only opens the sentence does not count as another name."""
    cities = phrases_for(None, {}, ValueList.of(["San Francisco", "Seattle"]))
    assert best("a one way flight from San Diego", cities) is None
    assert best("a one way flight from San Francisco", cities)[0] == "San Francisco"
    assert best("flights from san, the usual one", cities)[0] == "San Francisco"
    places = phrases_for(None, {}, ValueList.of(["Cartoon Art Museum", "Golden Gate Park"]))
    assert best("a cab to the National Gallery of Modern Art", places) is None
    assert best("a cab to the Art museum", places)[0] == "Cartoon Art Museum"
    stored = phrases_for(None, {}, ValueList.of(["Tesla Inc.", "Orion Data Systems"]))
    assert best("Tesla orders this year", stored)[:2] == ("Tesla Inc.", "partial_name")
    assert best("Show Orion orders", stored)[0] == "Orion Data Systems"
    never_names = ("orders of Tesla March 2024", "show me Tesla Q3 orders", "Tesla orders Please", "Show Tesla Orders")
    for question in never_names:
        assert best(question, stored)[0] == "Tesla Inc.", question  # words that are never part of a name


def test_one_side_of_a_match_names_no_event_with_another_side():
    """'Huskies vs Utes' is no 'Owls Vs Huskies' (nor 'Nationals vs Brewers' 'Giants Vs Nationals'); a side
    said alone, or both of the value's sides in either order, still name it."""
    events = phrases_for(None, {}, ValueList.of(["Owls Vs Huskies", "Giants Vs Nationals"]))
    assert best("dates for a Huskies vs Utes game?", events) is None
    assert best("when is the Nationals vs the Brewers game", events) is None
    assert best("when is the Brewers versus Nationals game", events) is None
    assert best("when do the Huskies play", events)[:2] == ("Owls Vs Huskies", "partial_name")
    assert best("two tickets to Huskies vs Owls", events)[:2] == ("Owls Vs Huskies", "partial_name")
    assert best("tickets for Huskies vs Temple Owls", events)[0] == "Owls Vs Huskies"  # a longer side names it
    departments = phrases_for(None, {}, ValueList.of(["Engineering Department", "Sales Team"]))
    assert best("headcount in Engineering vs Sales", departments) is not None  # two listed values compared
    companies = phrases_for(None, {}, ValueList.of(["Ford Motor Company", "Tesla Inc."]))
    assert best("revenue for Ford vs last year", companies)[0] == "Ford Motor Company"  # set against no name


def test_a_kind_of_place_is_no_distinctive_word():
    """'city' of 'in this city' named 'New York City', the one listed value with the word."""
    cities = phrases_for(None, {}, ValueList.of(["New York City", "Boston", "Orange County"]))
    assert best("the weather in this city", cities) is None
    assert best("any county fair this weekend", cities) is None
    assert best("the weather in new york", cities)[:2] == ("New York City", "partial_name")
    teams = ["Ohio State University", "Ohio University", "Kansas City Royals", "Kansas Jayhawks"]
    schools = phrases_for(None, {}, ValueList.of(teams))
    assert best("Ohio State game", schools)[0] == "Ohio State University"  # beside another word it tells apart
    assert best("Kansas City tickets", schools)[0] == "Kansas City Royals"


def test_suggestions_are_the_closest_values():
    stored = ["Stonegate Engineering Ltd.", "Stonegate Software Studio", "Orion Data Systems"]
    assert set(suggestions("stonegate", stored)) == {"Stonegate Engineering Ltd.", "Stonegate Software Studio"}
    assert suggestions("", stored) == []


def test_a_word_of_the_language_or_another_number_is_no_misspelling():
    """'Iceland' is 86% like 'Ireland' and 'Austria' like 'Australia', but each is a word of its own (the
    encoder's vocabulary); 'Irland' is not, and is read as the misspelling it is."""
    phrases = phrases_for(["Ireland", "Australia", "Germany"], {})
    assert best("how many customers in Iceland", phrases) is None
    assert best("customers in Austria", phrases) is None
    assert best("customers in Irland", phrases) == ("Ireland", "fuzzy", "Irland")
    assert best("customers in germny", phrases) == ("Germany", "fuzzy", "germny")
    products = phrases_for([], {}, ValueList.of(["Scout 14 Laptop", "Scout 15 Laptop"]))
    assert best("how did the Scout 13 Laptop sell", products) is None
    assert best("how did the Scout 14 Laptpo sell", products) == ("Scout 14 Laptop", "fuzzy", "Scout 14 Laptpo")


def test_a_spelling_of_the_same_sounds_is_the_value_though_a_word_of_its_own():
    """'theatre' and 'Columbia' are words of the language too, but they spell the value's sounds."""
    phrases = phrases_for(["Theater", "Jewelry", "Colombia", "Catalog"], {})
    assert best("any theatre shows", phrases) == ("Theater", "fuzzy", "theatre")
    assert best("jewellery shops", phrases)[0] == "Jewelry"
    assert best("flights to Columbia", phrases)[0] == "Colombia"
    people = phrases_for([], {}, ValueList.of(["John Smith", "Catherine Jones"]))
    assert best("reviews of John Smyth", people)[0] == "John Smith"
    assert best("what does Katherine Jones earn", people)[0] == "Catherine Jones"


def test_a_whole_value_beside_other_capitals_is_still_named():
    """Title-case questions and 'City State': the capitals around a value say nothing of it."""
    phrases = phrases_for(["Germany", "Mexico", "Canada", "Chicago", "Engineering"], {})
    assert best("How Many Customers Are In Germany Last Year", phrases)[0] == "Germany"
    assert best("orders in Chicago Illinois", phrases)[0] == "Chicago"
    assert best("Engineering Salaries", phrases)[0] == "Engineering"
    found = find_choices("list customers in Mexico Canada and Brazil", phrases, ChoiceRules())
    assert {m.value for m in found} == {"Mexico", "Canada"}


def test_two_words_in_a_row_name_the_one_value_that_has_them():
    """Each of 'wireless' and 'mouse' is in two names; together, in that order, only in one."""
    products = phrases_for([], {}, ValueList.of(["Wireless Mouse M2", "Ergo Vertical Mouse", "Slim Wireless Keyboard"]))
    assert best("sales of the wireless mouse in 2024", products) == (
        "Wireless Mouse M2",
        "partial_name",
        "wireless mouse",
    )
    assert best("wireless keyboard sales", products)[0] == "Slim Wireless Keyboard"
    assert best("sales of the mouse in 2024", products) is None
    assert best("a mouse that is wireless", products) is None


def test_a_value_after_a_capitalised_compass_word_is_another_place():
    phrases = phrases_for(["Mexico", "South Korea", "Virginia", "New York", "South"], {"Korea": "South Korea"})
    assert best("customers based in New Mexico", phrases) is None
    assert best("list customers in North Korea", phrases) is None
    assert best("customers in West Virginia", phrases) is None
    assert best("orders from New York", phrases)[0] == "New York"  # a listed value that holds both words
    assert best("Show New Customers In Mexico", phrases)[0] == "Mexico"
    assert best("customers in the South region", phrases)[0] == "South"


def test_a_compass_value_before_a_name_is_another_place():
    phrases = phrases_for(["North", "South", "East", "West", "South Korea"], {})
    assert best("how many customers in South Africa?", phrases) is None
    assert best("customers in North Carolina", phrases) is None
    assert best("customers from South Korea", phrases)[0] == "South Korea"
    region = ChoiceRules(ordinary=frozenset({"region"}))
    titled = find_choices("How Many Customers In The South Region", phrases, region)
    assert [m.value for m in titled] == ["South"]  # 'region' is a word of the template's own examples
    assert best("customers in the West please", phrases)[0] == "West"
    assert best("how many customers in the South Please", phrases)[0] == "South"
    assert best("customers in the south africa office", phrases)[0] == "South"  # lower case: no name to see
    with_the = phrases_for(["North", "South"], {"the north": "North"})
    assert best("how many customers in the North Carolina office", with_the) is None  # the alias ends in it


@pytest.mark.parametrize(
    "question, values",
    [
        ("How Many Customers North Vs South", ["North", "South"]),
        ("How Many Customers In South Overall", ["South"]),
        ("Number Of Customers In West Currently", ["West"]),
        ("Customer Count: South Only", ["South"]),
    ],
)
def test_a_capital_after_a_compass_value_says_nothing_in_a_title_case_question(question, values):
    found = find_choices(question, phrases_for(["North", "South", "East", "West"], {}), ChoiceRules())
    assert sorted(m.value for m in found) == values
