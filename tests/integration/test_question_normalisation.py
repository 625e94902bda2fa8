"""Question normalisation on the demo (real MiniLM, SQLite + DuckDB): a full-width or typographically
dressed question routes, extracts and answers like its plain ASCII twin; the question is shown as
asked, with the normalised form beside it."""

from __future__ import annotations

import pytest

from server.service import answer as answering

pytestmark = pytest.mark.asyncio(loop_scope="module")

ASCII = "how many employees are in Engineering?"
FULL_WIDTH = "ｈｏｗ ｍａｎｙ ｅｍｐｌｏｙｅｅｓ ａｒｅ ｉｎ Ｅｎｇｉｎｅｅｒｉｎｇ？"


@pytest.mark.parametrize("adapter", ["company", "hr"])
async def test_full_width_question_routes_like_the_ascii_one(demo_runtime, adapter):
    plain = await answering.answer(demo_runtime.get(adapter), ASCII)
    wide = await answering.answer(demo_runtime.get(adapter), FULL_WIDTH)

    assert plain.status == wide.status == "executed"
    assert wide.body["metadata"]["template_id"] == plain.body["metadata"]["template_id"]
    assert wide.body["metadata"]["parameters"] == plain.body["metadata"]["parameters"]
    assert wide.body["metadata"]["parameters"]["department"] == "Engineering"
    assert wide.body["rows"] == plain.body["rows"]
    assert wide.body["confidence"] == pytest.approx(plain.body["confidence"], abs=1e-6)
    assert wide.body["metadata"]["normalised_query"] == ASCII
    assert "normalised_query" not in plain.body["metadata"]


async def test_typographic_quotes_dashes_and_spaces_do_not_change_the_decision(demo_runtime):
    dressed = "how\u00a0many employees are in \u201cEngineering\u201d\u200b?"
    plain_body = (
        await answering.explain_routing(demo_runtime.get("company"), 'how many employees are in "Engineering"?')
    ).body
    explained = await answering.explain_routing(demo_runtime.get("company"), dressed)
    body, outcome = explained.body, explained.outcome
    assert body["query"] == dressed  # shown as asked
    assert body["normalised_query"] == 'how many employees are in "Engineering"?'
    assert outcome.question == body["normalised_query"]  # what routing saw
    assert body["routing_decision"]["selected_template"] == plain_body["routing_decision"]["selected_template"]
    assert body["routing_decision"]["selection_score"] == pytest.approx(
        plain_body["routing_decision"]["selection_score"], abs=1e-6
    )
    assert body["routing_decision"]["parameters"]["values"] == plain_body["routing_decision"]["parameters"]["values"]
