"""Replies to the demo's "which employee?" and "whose reports?": a lower-case name, a name after a verb or a
title, and words that name nobody (conversations/bare_reply.py, params/strings.py)."""

from __future__ import annotations

import pytest

from server.service.answer import answer_in_session

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _two_turns(demo_runtime, first: str, second: str) -> dict:
    company, sessions = demo_runtime.get("company"), demo_runtime.sessions
    asked = await answer_in_session(company, first, sessions, None)
    assert asked.status == "needs_clarification"
    return (await answer_in_session(company, second, sessions, asked.body["session_id"])).body


@pytest.mark.parametrize(
    ("first", "reply", "template", "parameter", "name"),
    [
        ("look up an employee", "priya raman", "employee_lookup", "name", "priya raman"),
        ("look up an employee", "Check Marcus Webb.", "employee_lookup", "name", "Marcus Webb"),
        ("look up an employee", "Mr. Robert Kline", "employee_lookup", "name", "Robert Kline"),
        ("how many people report to?", "Dr Elena Petrova", "count_direct_reports", "manager_name", "Elena Petrova"),
        ("how many people report to?", "our CEO Catherine Holloway", "count_direct_reports", "manager_name",
         "Catherine Holloway"),
    ],
)  # fmt: skip
async def test_a_name_answers_who(demo_runtime, first, reply, template, parameter, name):
    body = await _two_turns(demo_runtime, first, reply)
    meta = body["metadata"]
    assert (body["status"], meta["template_id"], meta["reason"]) == ("executed", template, "clarification_answered")
    assert meta["parameters"][parameter] == name and body["rows"]


@pytest.mark.parametrize(
    ("first", "reply"),
    [
        ("look up an employee", "never mind"),
        ("look up an employee", "Anyone"),
        ("how many people report to?", "What about Sunday?"),
        ("look up an employee", "idk"),
    ],
)
async def test_words_that_name_nobody_are_no_name(demo_runtime, first, reply):
    meta = (await _two_turns(demo_runtime, first, reply))["metadata"]
    assert not any(str(v).casefold() in reply.casefold() for v in (meta.get("parameters") or {}).values() if v)
