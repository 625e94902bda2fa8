"""Several values named for a one-value parameter run once each (service/each_value.py), on the demo: the
rows come back together, each with the value it ran for, checked against the database; before, every one
of these questions ended in "department: 'Sales / Engineering' could mean Sales or Engineering; which one?"."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from server.conversations.memory_store import MemorySessionStore
from server.conversations.settings import SessionSettings
from server.service import answer as answering

pytestmark = pytest.mark.asyncio(loop_scope="module")


def headcount(root: Path, department: str) -> int:
    sql = "SELECT COUNT(*) FROM employees WHERE department = ? AND status = 'active'"
    with contextlib.closing(sqlite3.connect(f"file:{root / 'templates' / 'hr' / 'hr.db'}?mode=ro", uri=True)) as con:
        return int(con.execute(sql, (department,)).fetchone()[0])


async def test_two_departments_get_one_answer_each(demo_runtime, demo_config_dir):
    company = demo_runtime.get("company")
    result = await answering.answer(company, "how many employees in Sales and Marketing")
    meta = result.body["metadata"]
    assert result.status == "executed" and meta["template_id"] == "employee_count_by_department"
    assert meta["each_value"] == {"parameter": "department", "values": ["Sales", "Marketing"]}
    assert meta["parameters"]["department"] == ["Sales", "Marketing"]
    root = demo_config_dir.parent
    assert result.body["rows"] == [
        {"department": "Sales", "employee_count": headcount(root, "Sales")},
        {"department": "Marketing", "employee_count": headcount(root, "Marketing")},
    ]
    assert meta["columns"] == ["department", "employee_count"] and meta["row_count"] == 2
    found = [(e["name"], e["value"], e["text"]) for e in meta["extraction"]]
    assert found == [("department", "Sales", "Sales"), ("department", "Marketing", "Marketing")]
    assert "Not applied" not in result.body["content"]
    assert result.body["content"].startswith("One answer for each department: Sales, Marketing.\n")


async def test_rows_that_name_the_value_already_are_not_given_it_twice(demo_runtime):
    result = await answering.answer(demo_runtime.get("company"), "compare the salary summary of Sales and Engineering")
    meta = result.body["metadata"]
    assert meta["template_id"] == "department_salary_summary" and meta["each_value"]["values"] == [
        "Sales",
        "Engineering",
    ]
    assert [row["department"] for row in result.body["rows"]] == ["Sales", "Engineering"]
    assert meta["columns"].count("department") == 1


async def test_a_follow_up_changes_the_value_and_runs_once(demo_runtime):
    sessions = MemorySessionStore(SessionSettings())
    company = demo_runtime.get("company")
    first = await answering.answer_in_session(company, "how many employees in Sales and Marketing", sessions, None)
    sid = first.body["session_id"]
    then = await answering.answer_in_session(company, "what about HR?", sessions, sid)
    meta = then.body["metadata"]
    assert meta["reason"] == "follow_up" and meta["parameters"] == {"department": "HR"}
    assert "each_value" not in meta and len(then.body["rows"]) == 1


async def test_more_values_than_one_question_holds_are_asked_about(demo_runtime):
    question = "headcount of Sales, Marketing, HR, Finance, Engineering and Operations"  # six: above MAX_VALUES
    result = await answering.answer(demo_runtime.get("company"), question)
    meta = result.body["metadata"]
    assert result.status == "needs_clarification" and "each_value" not in meta
    [asked] = meta["clarification"]
    assert asked["problem"] == "ambiguous" and len(asked["suggestions"]) == 6


async def test_a_follow_up_that_changes_something_else_runs_each_value_again(demo_runtime, demo_config_dir):
    sessions = MemorySessionStore(SessionSettings())
    company = demo_runtime.get("company")
    first = await answering.answer_in_session(company, "who works in Finance and HR", sessions, None)
    meta = first.body["metadata"]
    assert meta["template_id"] == "employees_by_department" and meta["parameters"]["department"] == ["Finance", "HR"]
    then = await answering.answer_in_session(company, "only the top 3", sessions, first.body["session_id"])
    meta = then.body["metadata"]
    assert meta["reason"] == "follow_up" and meta["parameters"] == {"department": ["Finance", "HR"], "limit": 3}
    assert [row["department"] for row in then.body["rows"]] == ["Finance"] * 3 + ["HR"] * 3


@pytest.mark.parametrize(
    "question",
    [
        "how many employees in Sales but not Marketing",
        "how many employees in Sales excluding Marketing",
        "how many people in Sales report to the HR manager",
        "who works in Sales Operations",
    ],
)
async def test_values_not_named_as_a_list_are_not_answered_each(demo_runtime, question):
    """A value ruled out, or two values that do not stand side by side as a list, is no request for both."""
    result = await answering.answer(demo_runtime.get("company"), question)
    assert "each_value" not in result.body["metadata"]
    assert not any(isinstance(v, list) for v in (result.body["metadata"].get("parameters") or {}).values())


async def test_a_follow_up_naming_other_values_changes_the_list(demo_runtime):
    sessions = MemorySessionStore(SessionSettings())
    company = demo_runtime.get("company")
    first = await answering.answer_in_session(company, "how many employees in Sales and Marketing", sessions, None)
    then = await answering.answer_in_session(company, "and Finance and Support?", sessions, first.body["session_id"])
    meta = then.body["metadata"]
    assert meta["reason"] == "follow_up" and meta["session"]["changed"] == ["department"]
    assert meta["parameters"] == {"department": ["Finance", "Support"]}
    assert [row["department"] for row in then.body["rows"]] == ["Finance", "Support"]


async def test_fan_out_answers_each_value_as_route_once_does(demo_runtime):
    result = await answering.answer(
        demo_runtime.get("company"), "how many employees in Sales and Marketing", execution="fan_out"
    )
    [hr] = [s for s in result.body["sections"] if s["adapter"] == "hr"]
    assert hr["status"] == "ok" and hr["parameters"]["department"] == ["Sales", "Marketing"]
    assert [row["department"] for row in hr["rows"]] == ["Sales", "Marketing"]
