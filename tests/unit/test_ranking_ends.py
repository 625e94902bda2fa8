"""The ranking-end rule: a question that asks for the lowest is not answered by a template that ranks from the
highest (and the other way round); the next candidate answers if it clears the threshold, and the rule says
whether the refused one would have run."""

from __future__ import annotations

import pytest

from server.routing.ranking_ends import RankingEnd, asked_end, ranks_from_the_other_end, refuse_other_end
from server.testing.templates import candidate, template

TOP = template(tid="top_earners", description="The highest-paid active employees company-wide, ranked by salary")
SUMMARY = template(
    tid="department_salary_summary", description="Salary summary for one department (average, lowest, highest)"
)
BY_DEPT = template(tid="employees_by_department", description="List the active employees of one department")
CHEAP = template(tid="cars_by_make", description="Used cars for sale from one manufacturer, cheapest first")
TOP_UP = template(tid="top_up_limits", description="top up limits")


@pytest.mark.parametrize(
    ("question", "end"),
    [
        ("who has the lowest salary", "lowest"),
        ("which customers bring in the least revenue", "lowest"),
        ("worst selling products", "lowest"),
        ("top 5 customers", "highest"),
        ("who earns the most", "highest"),
        ("highest and lowest salary in Sales", None),  # both ends
        ("orders of at most 5 items", None),  # a bound
        ("most recent orders", None),  # a time
        ("what is the most i can top up?", "highest"),
        ("how do I top up my card", None),
        ("best price for a Toyota", None),  # "best" is no end: the best price is the lowest
        ("rank the customers by revenue, at the very least", None),
        ("last but not least, the bottom line", None),
        ("a top-notch laptop", None),
    ],
)
def test_the_end_a_question_asks_for(question, end):
    assert asked_end(question) == end


def test_a_template_ranks_from_the_other_end_only_when_it_never_names_the_asked_one():
    assert ranks_from_the_other_end(TOP, "lowest") and not ranks_from_the_other_end(TOP, "highest")
    assert not ranks_from_the_other_end(SUMMARY, "lowest")  # names both ends
    assert not ranks_from_the_other_end(BY_DEPT, "lowest")  # names none
    assert ranks_from_the_other_end(CHEAP, "highest")  # "most expensive cars" is not the cheapest first
    assert not ranks_from_the_other_end(TOP_UP, "lowest")  # "top up" ranks nothing


def test_when_the_best_ranks_from_the_other_end_the_next_one_answers_and_the_rule_says_it_would_have_run():
    ranked = [candidate(TOP, 0.8), candidate(BY_DEPT, 0.5), candidate(SUMMARY, 0.4)]
    kept, rule = refuse_other_end("who has the lowest salary", ranked, threshold=0.2)
    assert [c.template.id for c in kept] == ["employees_by_department", "department_salary_summary"]
    assert rule == RankingEnd("lowest", ["hr/top_earners"], would_have_run=True)
    _, below = refuse_other_end("who has the lowest salary", ranked, threshold=0.9)
    assert below is not None and not below.would_have_run  # it would not have cleared the threshold anyway


def test_when_a_lower_candidate_ranks_from_the_other_end_the_best_still_answers():
    ranked = [candidate(BY_DEPT, 0.8), candidate(TOP, 0.5)]
    kept, rule = refuse_other_end("lowest paid people in Sales", ranked, threshold=0.2)
    assert [c.template.id for c in kept] == ["employees_by_department"]
    assert rule == RankingEnd("lowest", ["hr/top_earners"], would_have_run=False)


def test_a_question_that_asks_for_no_end_is_left_alone():
    ranked = [candidate(TOP, 0.8), candidate(BY_DEPT, 0.5)]
    assert refuse_other_end("who works in Sales", ranked, threshold=0.2) == (ranked, None)
    assert refuse_other_end("who are the top earners", ranked, threshold=0.2) == (ranked, None)
