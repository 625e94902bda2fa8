"""The defaults that chose what an answer is about are said in its content, routed once or fanned out:
"best sellers" on the demo is 2025's, and says so (service/formatting.py `assumed_line`)."""

from __future__ import annotations

import pytest

from server.service import answer as answering

pytestmark = pytest.mark.asyncio(loop_scope="module")
ASSUMED = "Assumed (not in the question): year 2025."


async def test_a_default_year_is_said(demo_runtime):
    said = await answering.answer(demo_runtime.get("company"), "best sellers")
    assert said.body["metadata"]["parameters"]["year"] == 2025 and said.body["content"].endswith(ASSUMED)
    given = await answering.answer(demo_runtime.get("company"), "best sellers in 2024")
    assert "Assumed" not in given.body["content"]


async def test_a_fanned_out_section_says_its_default_year(demo_runtime):
    fanned = await answering.answer(demo_runtime.get("company"), "best sellers", execution="fan_out")
    assert ASSUMED in fanned.body["content"]
