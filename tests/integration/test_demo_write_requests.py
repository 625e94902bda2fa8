"""Requests to change data on the demo (routing/write_requests.py): every demo template reads, so "delete all
employees" (which the stock encoder puts beside "list terminated employees" with a confident score) and the
other write commands a QA pass sent are not run; the answer says why, test_routing names the verb and what
it took out, and in a session such a message is not read as a follow-up of the last answer."""

from __future__ import annotations

import pytest

from server.service import answer as answering
from server.service.answer import answer_in_session

pytestmark = pytest.mark.asyncio(loop_scope="module")

REQUESTS = [
    ("delete all employees", "delete"),
    ("DROP TABLE employees;", "drop"),
    ("insert a new order for Sakura Robotics", "insert"),
    ("update Priya Raman's salary to 500000", "update"),
    ("remove customer Sakura Robotics", "remove"),
    ("erase all orders from 2023", "erase"),
    ("cancel order 42", "cancel"),
    ("drop the orders table", "drop"),
    ("'; DELETE FROM orders; --", "delete"),
    # actions on records, which read templates resembled (approved / pending leave, top earners, a price range)
    ("approve Emily Miller's vacation request", "approve"),
    ("reject all pending leave requests", "reject"),
    ("increase the Marketing budget by 500k", "increase"),
    ("promote Priya Raman to director", "promote"),
    ("raise Robert Kline's salary by 10%", "raise"),
]


@pytest.mark.parametrize(("question", "verb"), REQUESTS)
async def test_a_write_request_runs_nothing_and_says_why(demo_runtime, question, verb):
    result = await answering.answer(demo_runtime.get("company"), question)
    body = result.body
    assert body["status"] == "no_match" and body["rows"] == []
    assert body["metadata"]["reason"] == "asks_to_change_data"
    assert f"asks to {verb} data" in body["content"] and "nothing was run" in body["content"]
    assert body["metadata"]["composite_routing"]["write_request"]["verb"] == verb


async def test_test_routing_names_the_verb_and_the_templates_taken_out(demo_runtime):
    explained = await answering.explain_routing(demo_runtime.get("company"), "delete all employees")
    decision = explained.body["routing_decision"]
    assert decision["reason"] == "asks_to_change_data" and decision["would_execute"] is False
    assert decision["write_request"]["verb"] == "delete"
    assert "hr/former_employees" in decision["write_request"]["refused"]


@pytest.mark.parametrize(
    ("question", "template"),
    [("list terminated employees", "former_employees"), ("show me the employees who were removed", None)],
)
async def test_questions_about_changes_still_route(demo_runtime, question, template):
    result = await answering.answer(demo_runtime.get("company"), question)
    assert result.body["metadata"]["reason"] != "asks_to_change_data"
    if template is not None:
        assert result.body["metadata"]["template_id"] == template and result.body["status"] == "executed"


async def test_in_a_session_a_write_request_is_not_a_follow_up(demo_runtime):
    company, sessions = demo_runtime.get("company"), demo_runtime.sessions
    first = await answer_in_session(company, "who works in Marketing?", sessions, None)
    assert first.body["status"] == "executed"
    sid = first.body["session_id"]
    second = await answer_in_session(company, "delete Sales", sessions, sid)
    assert second.body["status"] == "no_match" and second.body["rows"] == []
    assert second.body["metadata"]["reason"] == "asks_to_change_data"
    assert "follow_up" not in second.body["metadata"]["session"]
    # the conversation goes on: the next message still follows the list it had
    third = await answer_in_session(company, "what about Sales?", sessions, sid)
    assert third.body["status"] == "executed" and third.body["metadata"]["parameters"]["department"] == "Sales"
