"""Values a question names that its template cannot take are reported, not silently dropped: whole-word
values of another template's closed list, for a parameter this template lacks, that the extraction did not
use and that are no ordinary word of this template's own examples."""

from __future__ import annotations

from server.params.not_applied import listed_values, not_applied, note, unbounded_ends
from server.params.numbers import find_numbers
from server.templates import ParameterSpec, Template


def template(tid: str, parameters: list[ParameterSpec], examples: list[str] | None = None) -> Template:
    return Template(
        id=tid,
        description=tid.replace("_", " "),
        nl_examples=examples or [],
        parameters=parameters,
        body_key="sql",
        body="SELECT 1",
        source_file="x",
    )


DEPARTMENT = ParameterSpec(
    name="department", allowed_values=["Engineering", "Sales", "HR"], aliases={"eng": "Engineering"}
)
BY_DEPARTMENT = template("people_in_department", [DEPARTMENT])
TOP = template("top_earners", [], ["who earns the most", "top sales people"])
FLAGS = template(
    "flags",
    [
        ParameterSpec(name="remote", type="boolean"),
        ParameterSpec(name="level", type="integer", allowed_values=[1, 2, 3]),
    ],
)
LISTED = listed_values([BY_DEPARTMENT, TOP, FLAGS])


def test_the_values_that_may_name_something():
    assert [(v.parameter, v.text) for v in LISTED] == [
        ("department", "Engineering"),
        ("department", "Sales"),
        ("department", "eng"),  # an alias counts too
    ]  # HR is too short to be sure of; booleans and numbers name nothing


def test_a_value_of_a_parameter_the_template_lacks_is_reported_once():
    found = not_applied("who is the highest paid person in engineering, not Sales?", template("top", []), LISTED, [])
    assert found == [
        {
            "name": "department",
            "text": "engineering",
            "reason": "not applied: template 'top' has no parameter 'department'",
            "span": [34, 45],
        }
    ]
    assert note(found) == (
        "Not applied: 'engineering' (department): this query has no such filter, so the rows are not limited by it."
    )


def test_what_the_template_takes_uses_or_says_itself_is_not_reported():
    assert not_applied("who works in Sales", BY_DEPARTMENT, LISTED, []) == []  # its own parameter
    assert not_applied("who works in Sales", template("top", []), LISTED, [(13, 18)]) == []  # used by the extraction
    assert not_applied("top sales people", TOP, LISTED, []) == []  # an ordinary word of its own examples
    assert not_applied("wholesale prices", template("top", []), LISTED, []) == []  # whole words only
    assert note([{"name": "limit", "text": "500", "reason": "must be at most 100"}]) is None


def test_a_value_inside_another_place_name_is_not_reported():
    region = template("by_region", [ParameterSpec(name="region", allowed_values=["North", "South"])])
    listed = listed_values([region])
    by_country = template("customers_by_country", [ParameterSpec(name="country")])
    assert not_applied("customers in South Africa", by_country, listed, []) == []
    assert [e["text"] for e in not_applied("customers in the South", by_country, listed, [])] == ["South"]


def test_the_end_of_a_number_range_the_template_has_no_bound_for_is_reported():
    above = template("earning_above", [ParameterSpec(name="min_salary", type="number")])
    question = "employees earning between 100k and 150k"
    mentions = find_numbers(question)
    low = next(m for m in mentions if m.range_role == "low")
    assert unbounded_ends(above, question, [low.span]) == [
        {
            "name": "maximum",
            "text": "150k",
            "reason": "not applied: template 'earning_above' has no maximum",
            "span": [35, 39],
        }
    ]
    assert "Not applied: '150k' (maximum)" in note(unbounded_ends(above, question, [low.span]))
    both = template(
        "in_range", [ParameterSpec(name="min_salary", type="number"), ParameterSpec(name="max_salary", type="number")]
    )
    assert unbounded_ends(both, question, [low.span]) == []  # the template has the bound (the value went elsewhere)
    assert unbounded_ends(above, question, []) == []  # neither end applied: nothing of the range was used
