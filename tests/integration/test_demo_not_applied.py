"""A value the chosen template cannot take is said, not silently dropped (params/not_applied.py): on the demo
"who is the highest paid person in Sales?" lands on the company-wide ranking, which has no department; the
answer lists everyone as before, and now says that Sales was not applied."""

from __future__ import annotations

import math

import pytest

from server.service import answer as answering


async def test_a_department_the_ranking_cannot_take_is_reported(demo_runtime):
    result = await answering.answer(demo_runtime.get("company"), "who is the highest paid person in Sales?")
    body = result.body
    assert body["status"] == "executed" and body["metadata"]["template_id"] == "top_earners"
    (left,) = body["metadata"]["extraction_left_out"]
    assert (left["name"], left["text"]) == ("department", "Sales") and left["reason"].startswith("not applied")
    assert body["content"].endswith(
        "Not applied: 'Sales' (department): this query has no such filter, so the rows are not limited by it."
    )


async def test_a_department_the_template_takes_is_applied_and_not_reported(demo_runtime):
    result = await answering.answer(demo_runtime.get("company"), "who works in Marketing?")
    assert result.body["metadata"]["parameters"]["department"] == "Marketing"
    assert "extraction_left_out" not in result.body["metadata"] and "Not applied" not in result.body["content"]


async def test_a_department_the_question_rules_out_is_not_the_one_listed(demo_runtime):
    """'employees not in engineering' used to list Engineering: now the department is asked for, and why."""
    result = await answering.answer(demo_runtime.get("company"), "employees not in engineering")
    body = result.body
    assert body["status"] == "needs_clarification" and body["rows"] == []
    assert [c["name"] for c in body["metadata"]["clarification"]] == ["department"]
    assert "'engineering' (department): the question rules it out" in body["content"]


async def test_a_quarter_on_a_yearly_template_says_the_answer_covers_the_year(demo_runtime):
    """'how many orders did we get in Q2 2024' lands on the yearly totals: the figure is 2024's, and says so."""
    result = await answering.answer(demo_runtime.get("company"), "how many orders did we get in Q2 2024")
    body = result.body
    assert body["metadata"]["template_id"] == "order_totals_for_year" and body["metadata"]["parameters"]["year"] == 2024
    assert body["content"].endswith(
        "Widened: 'Q2 2024' (year): this query takes a whole year, so the answer covers all of it."
    )


async def test_the_end_of_a_salary_range_a_minimum_only_template_cannot_take_is_reported(demo_runtime):
    result = await answering.answer(demo_runtime.get("company"), "employees earning between 100k and 150k")
    meta = result.body["metadata"]
    # 'between' holds its ends, the query's '>' does not: just below 100k (bounds.py)
    assert (meta["template_id"], meta["parameters"]["min_salary"]) == (
        "employees_earning_above",
        math.nextafter(100000, -math.inf),
    )
    assert [(e["name"], e["text"]) for e in meta["extraction_left_out"]] == [("maximum", "150k")]
    assert "Not applied: '150k' (maximum)" in result.body["content"]


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("average rating per department in the 2010s", "the 2010s"),  # was year 2025, the default
        ("revenue by region between 2023 and 2024", "between 2023 and 2024"),  # was 2023, its first year
    ],
)
async def test_several_years_where_one_year_fits_ask_which(demo_runtime, question, said):
    body = (await answering.answer(demo_runtime.get("company"), question)).body
    assert body["status"] == "needs_clarification"
    assert [c["name"] for c in body["metadata"]["clarification"]] == ["year"]
    assert [(e["name"], e["text"]) for e in body["metadata"]["extraction_left_out"]] == [("year", said)]


async def test_a_bound_said_the_other_way_is_reported_beside_the_question(demo_runtime):
    """Found by a QA pass: 'how many employees make under 50k' asked for a minimum salary without a word about
    the 50k, and the reply '50k' counted those above it."""
    result = await answering.answer(demo_runtime.get("company"), "how many employees make under 50k")
    body = result.body
    assert (
        body["status"] == "needs_clarification" and body["metadata"]["template_id"] == "count_employees_earning_above"
    )
    assert [(e["name"], e["text"]) for e in body["metadata"]["extraction_left_out"]] == [("maximum", "50k")]
    assert "Not applied: '50k' (maximum)" in body["content"]


@pytest.mark.parametrize(
    ("question", "template", "ruled"),
    [
        ("who got hired in 2024 but not in december", "employees_hired_in_period", "december"),
        ("orders in 2024 except march", "orders_between_dates", "march"),
    ],
)
async def test_a_period_the_question_rules_out_is_said(demo_runtime, question, template, ruled):
    """Found by a QA pass: the year was answered whole, December included, without a word."""
    body = (await answering.answer(demo_runtime.get("company"), question)).body
    meta = body["metadata"]
    assert (meta["template_id"], meta["parameters"]["start_date"], meta["parameters"]["end_date"]) == (
        template,
        "2024-01-01",
        "2024-12-31",
    )
    assert f"Not applied: '{ruled}' (start_date): the question rules it out" in body["content"]


async def test_a_year_the_question_rules_out_is_no_range(demo_runtime):
    """'orders not in 2024' ran the orders of 2024."""
    body = (await answering.answer(demo_runtime.get("company"), "orders not in 2024")).body
    assert body["status"] == "needs_clarification" and "the question rules it out" in body["content"]


@pytest.mark.parametrize("question", ["hires in 2024 not 2023", "who is on leave tomorrow, not today"])
async def test_a_period_ruled_out_outside_what_ran_says_nothing(demo_runtime, question):
    """Found by a review: the note was written for a ruled-out day the answer's range does not hold."""
    body = (await answering.answer(demo_runtime.get("company"), question)).body
    assert body["status"] == "executed" and "rules it out" not in body["content"]
