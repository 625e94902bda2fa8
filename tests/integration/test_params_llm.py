"""The optional LLM pass through the real anthropic SDK against the loopback stand-in of the Messages API."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from server.adapters.base import DataAdapterSettings
from server.params.factory import build_extractor
from server.testing.anthropic_standin import RAW_TEXT_MARKER, AnthropicStandin, Reply
from server.testing.templates import template

TODAY = dt.date(2025, 12, 31)
KEY = "test-key"


NAME = {"name": "name", "type": "string", "required": True, "description": "Employee name"}
LIMIT = {"name": "limit", "type": "integer", "default": 10, "min": 1, "max": 100}


def extractor_for(api: AnthropicStandin, **llm):
    block = {
        "llm": {
            "enabled": True,
            "api_key_env": "PARAMS_LLM_KEY",
            "base_url": api.base_url,
            "model": "claude-test",
            "timeout": 2.0,
            **llm,
        }
    }
    settings = DataAdapterSettings(name="hr", type="sql", templates=["x/*.yaml"], parameter_extraction=block)
    return build_extractor(settings, None, today=lambda: TODAY, environ={"PARAMS_LLM_KEY": KEY})


@pytest.fixture
async def api():
    async with AnthropicStandin(api_key=KEY) as server:
        yield server


async def test_llm_fills_a_missing_required_value_and_the_request_is_built_from_the_template(api):
    ex = extractor_for(api)
    api.enqueue(Reply.tool_input({"name": "Priya"}))
    got = await ex.extract("contact card please, first name priya", template(NAME, LIMIT))
    assert got.ok and got.values == {"name": "Priya", "limit": 10}
    (llm_step,) = [t for t in got.trace if t.extractor == "llm"]
    assert llm_step.text == "priya" and llm_step.span == (32, 37)
    assert got.llm == {"status": "ok", "asked": ["name"], "filled": ["name"]}
    body = api.last_request.body
    assert body["model"] == "claude-test"
    assert body["tool_choice"] == {"type": "tool", "name": "fill_parameters", "disable_parallel_tool_use": True}
    (tool,) = body["tools"]
    assert tool["input_schema"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"name": {"type": "string", "description": "Employee name"}},
    }
    assert "<question>contact card please, first name priya</question>" in body["messages"][0]["content"]
    assert "<today>2025-12-31</today>" in body["messages"][0]["content"]
    await ex.close()


async def test_schema_carries_types_enums_bounds_and_formats(api):
    ex = extractor_for(api)
    t = template(
        {"name": "status", "type": "enum", "required": True, "allowed_values": ["open", "closed"]},
        {"name": "day", "type": "date", "required": True},
        {"name": "count", "type": "integer", "required": True, "min": 1, "max": 5},
        {"name": "code", "type": "string", "required": True, "pattern": "^[A-Z]{2}$"},
        {"name": "tags", "type": "array", "item_type": "string", "required": True},
    )
    await ex.extract("hello", t)
    props = api.last_request.body["tools"][0]["input_schema"]["properties"]
    assert props == {
        "status": {"type": "string", "enum": ["open", "closed"]},
        "day": {"type": "string", "format": "date"},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
        "code": {"type": "string", "pattern": "^[A-Z]{2}$"},
        "tags": {"type": "array", "items": {"type": "string"}},
    }
    await ex.close()


async def test_llm_values_go_through_the_same_validation(api):
    ex = extractor_for(api)
    t = template(
        {"name": "department", "type": "string", "required": True, "allowed_values": ["Sales", "HR"]},
        {"name": "year", "type": "integer", "required": True, "min": 2023, "max": 2025},
    )
    api.enqueue(Reply.tool_input({"department": "Legal", "year": 2019}))
    got = await ex.extract("the usual report", t)
    problems = {p.name: p for p in got.problems}
    assert problems["department"].problem == "invalid" and problems["department"].given == "Legal"
    assert problems["year"].problem == "invalid" and "at least 2023" in problems["year"].message
    assert got.values == {}
    await ex.close()


async def test_llm_is_not_called_when_nothing_required_is_missing(api):
    ex = extractor_for(api)
    got = await ex.extract("look up Priya Raman", template(NAME))
    assert got.values == {"name": "Priya Raman"} and got.llm == {"status": "not_needed"}
    assert api.requests == []
    await ex.close()


async def test_a_value_the_model_leaves_out_stays_missing(api):
    ex = extractor_for(api)
    api.enqueue(Reply.tool_input({}))
    got = await ex.extract("contact card please", template(NAME))
    assert [p.problem for p in got.problems] == ["missing"]
    assert got.llm == {"status": "ok", "asked": ["name"], "filled": []}
    await ex.close()


@pytest.mark.parametrize(
    "reply, reason",
    [
        (Reply.refusal(), "refusal"),
        (Reply.text(), "no tool call in reply"),
        (Reply.truncated(), "reply truncated (max_tokens too small)"),
        (Reply.malformed_json(), "malformed reply (not a valid Messages API response)"),
        (Reply.tool_input(["Priya"]), "malformed reply (tool input is not an object)"),
        (Reply.error(500), "HTTP 500"),
        (Reply.overloaded(), "HTTP 529"),
        (Reply.tool_input({"name": "Priya"}).delayed(5), "timeout"),
    ],
)
async def test_failed_replies_leave_the_value_missing_and_never_leak_provider_text(api, reply, reason):
    ex = extractor_for(api, timeout=0.5)
    api.enqueue(reply)
    got = await ex.extract("contact card please", template(NAME))
    assert [p.problem for p in got.problems] == ["missing"] and "name" not in got.values
    assert got.llm == {"status": "error", "asked": ["name"], "reason": reason}
    assert RAW_TEXT_MARKER not in json.dumps(got.to_json())
    await ex.close()


async def test_a_wrong_key_is_an_error_reason_not_a_crash(api):
    api.api_key = "another-key"
    ex = extractor_for(api)
    got = await ex.extract("contact card please", template(NAME))
    assert got.llm == {"status": "error", "asked": ["name"], "reason": "HTTP 401"}
    await ex.close()
