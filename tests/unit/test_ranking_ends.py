"""The ranking-end rule: a question that asks for the lowest is not answered by a template that ranks from the
highest (and the other way round); when the best candidate was such a template, only one that names the asked
end may answer instead."""

from __future__ import annotations

import pytest

from server.routing.candidates import Candidate
from server.routing.ranking_ends import RankingEnd, asked_end, ranks_from_the_other_end, refuse_other_end
from server.templates import Template


def template(tid: str, description: str) -> Template:
    return Template(id=tid, description=description, nl_examples=[], body_key="sql", body="SELECT 1", source_file="x")


TOP = template("top_earners", "The highest-paid active employees company-wide, ranked by salary")
SUMMARY = template("department_salary_summary", "Salary summary for one department (average, lowest, highest)")
BY_DEPT = template("employees_by_department", "List the active employees of one department")
CHEAP = template("cars_by_make", "Used cars for sale from one manufacturer, cheapest first")
TOP_UP = template("top_up_limits", "top up limits")


def cand(t: Template, score: float) -> Candidate:
    return Candidate("hr", t, embedding_score=score, combined_score=score)


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


def test_when_the_best_ranks_from_the_other_end_only_the_asked_end_answers():
    kept, rule = refuse_other_end("who has the lowest salary", [cand(TOP, 0.8), cand(BY_DEPT, 0.5), cand(SUMMARY, 0.4)])
    assert [c.template.id for c in kept] == ["department_salary_summary"]
    assert rule == RankingEnd("lowest", ["hr/top_earners"])
    kept, _ = refuse_other_end("who has the lowest salary", [cand(TOP, 0.8), cand(BY_DEPT, 0.5)])
    assert kept == []


def test_when_a_lower_candidate_ranks_from_the_other_end_the_best_still_answers():
    kept, rule = refuse_other_end("lowest paid people in Sales", [cand(BY_DEPT, 0.8), cand(TOP, 0.5)])
    assert [c.template.id for c in kept] == ["employees_by_department"]
    assert rule == RankingEnd("lowest", ["hr/top_earners"])


def test_a_question_that_asks_for_no_end_is_left_alone():
    ranked = [cand(TOP, 0.8), cand(BY_DEPT, 0.5)]
    assert refuse_other_end("who works in Sales", ranked) == (ranked, None)
    assert refuse_other_end("who are the top earners", ranked) == (ranked, None)
