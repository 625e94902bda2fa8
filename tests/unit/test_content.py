"""The `content` text of an answer: a one-row summary says what each column holds, NULL included."""

from __future__ import annotations

from server.service.formatting import render_content
from server.testing.templates import template


def test_a_summary_says_none_for_a_null_not_nothing():
    summary = template(description="Hires in a period").model_copy(update={"result_format": "summary"})
    content = render_content(summary, [{"hires": 0, "still_employed": None}], truncated=False)
    assert content == "Hires in a period. hires: 0; still employed: none."
