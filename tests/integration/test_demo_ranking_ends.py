"""One end of a ranking asked for on the demo (routing/ranking_ends.py): "who has the lowest salary" resembles the
top earners' template, which would list the ten highest paid; it is taken out and the answer says why."""

from __future__ import annotations

from server.service import answer as answering


async def test_the_lowest_salary_is_not_answered_by_the_top_earners(demo_runtime):
    """'who has the lowest salary' used to list the ten highest paid (routing/ranking_ends.py)."""
    result = await answering.answer(demo_runtime.get("company"), "who has the lowest salary")
    body = result.body
    assert body["metadata"]["template_id"] != "top_earners" and body["rows"] == []
    end = body["metadata"]["composite_routing"]["ranking_end"]
    assert (end["asked"], end["refused"][0], end["would_have_run"]) == ("lowest", "hr/top_earners", True)
    assert body["content"].endswith(
        "Not run: 'hr/top_earners' ranks from the highest, and the question asks for the lowest."
    )
    explained = await answering.explain_routing(demo_runtime.get("company"), "who has the lowest salary")
    assert explained.body["routing_decision"]["ranking_end"]["refused"][0] == "hr/top_earners"
    top = await answering.answer(demo_runtime.get("company"), "who are the top earners")
    assert top.body["metadata"]["template_id"] == "top_earners" and "Not run" not in top.body["content"]
    assert "ranking_end" not in top.body["metadata"].get("composite_routing", {})
