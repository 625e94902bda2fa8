"""The new-question margin on the seeded demo (`sessions.new_question_margin`, the rule in
conversations/follow_up.py `confident`; its edges: tests/unit/test_follow_up_margin.py): a message that
would execute on its own but clears the threshold by less than the margin continues the last answer."""

from __future__ import annotations

import pytest

from server.service.answer import answer, answer_in_session

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_question_inside_the_margin_continues_the_last_answer(demo_runtime):
    company, sessions = demo_runtime.get("company"), demo_runtime.sessions
    alone = await answer(company, "Sales employees")
    score = alone.body["metadata"]["composite_routing"]["multistage_scoring"]["combined_score"]
    threshold, margin = company.settings.confidence_threshold, sessions.settings.new_question_margin
    # it executes on its own (another template), but does not clear the threshold by the margin
    assert alone.body["metadata"]["template_id"] == "employees_by_department"
    assert threshold <= score < threshold + margin
    first = await answer_in_session(company, "how many employees are in Engineering?", sessions, None)
    second = await answer_in_session(company, "Sales employees", sessions, first.body["session_id"])
    meta = second.body["metadata"]
    assert (meta["reason"], meta["template_id"]) == ("follow_up", "employee_count_by_department")
    assert meta["parameters"]["department"] == "Sales"
