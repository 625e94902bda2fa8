"""Values a question names that its template cannot take are reported, not silently dropped: whole-word
values of another template's closed list, for a parameter this template lacks, that the extraction did not
use and that are no ordinary word of this template's own examples."""

from __future__ import annotations

from server.params.not_applied import listed_values, not_applied, note
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
