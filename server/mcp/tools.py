"""The three MCP tools: their definitions (per caller and config) and how a call becomes a result.

A failure the caller can act on (bad arguments, an adapter out of scope, a source down, a timeout)
is a tool result with `isError` and the JSON API's error body as its text, so the assistant sees why;
it is never a stack trace or a driver message. Structured content is only ever what the tool's
outputSchema describes (an answer, an explanation, a catalogue): an error is none of those, so it has
none, as the MCP specification has it for tool errors.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..api.requests import SESSION_ID_PATTERN, AdapterName
from ..api.responses import QueryResponse, RoutingExplanation
from ..api.validation import first_problem, shown
from ..auth import Principal
from ..errors import IntentRouterError, error_body
from ..runtime.holder import RuntimeHolder
from ..service.catalogue import Catalogue
from ..service.formatting import MAX_TABLE_ROWS
from . import calls
from .descriptions import ask_description, explain_description, list_templates_description

log = logging.getLogger("intent_router.mcp")

ASK, EXPLAIN, LIST_TEMPLATES = "ask", "explain_routing", "list_templates"


class QuestionArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="The question, in plain language")
    adapter: AdapterName | None = Field(None, description="Which adapter answers it (default: the server's default)")


class AskArgs(QuestionArgs):
    session_id: str | None = Field(
        None,
        pattern=SESSION_ID_PATTERN,
        description="The session_id of an earlier answer, to continue that conversation",
    )


class TemplatesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    adapter: AdapterName | None = Field(None, description="Only this adapter (a composite: it and its children)")


def _ask_schema(adapters: list[str]) -> dict[str, Any]:
    schema = _question_schema(adapters)
    schema["properties"]["session_id"] = {
        "type": "string",
        "pattern": SESSION_ID_PATTERN,
        "description": "The session_id of an earlier answer: the question may then be just the value or the "
        "choice that answer asked for (optional; a new session is started and returned when absent)",
    }
    return schema


def _question_schema(adapters: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "description": "The question, in plain language"},
            "adapter": {"type": "string", "description": "Which adapter answers it (optional)"},
        },
        "required": ["question"],
        "additionalProperties": False,
    }
    if adapters:
        schema["properties"]["adapter"]["enum"] = adapters
    return schema


def tool_list(holder: RuntimeHolder, principal: Principal) -> list[types.Tool]:
    runtime = holder.current
    adapters = calls.queryable(runtime, principal)
    read_only = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    templates_schema: dict[str, Any] = {
        "type": "object",
        "properties": {"adapter": {"type": "string", "description": "Only this adapter (optional)"}},
        "additionalProperties": False,
    }
    return [
        types.Tool(
            name=ASK,
            title="Ask the data",
            description=ask_description(runtime, principal),
            input_schema=_ask_schema(adapters),
            output_schema=QueryResponse.model_json_schema(mode="serialization"),  # /v1/query's own model
            annotations=read_only,
        ),
        types.Tool(
            name=EXPLAIN,
            title="Explain routing",
            description=explain_description(),
            input_schema=_question_schema(adapters),
            output_schema=RoutingExplanation.model_json_schema(mode="serialization"),  # /v1/test_routing's
            annotations=read_only,
        ),
        types.Tool(
            name=LIST_TEMPLATES,
            title="List templates",
            description=list_templates_description(),
            input_schema=templates_schema,
            output_schema=Catalogue.model_json_schema(),  # the same pydantic model /v1/templates answers with
            annotations=read_only,
        ),
    ]


def _error(code: str, message: str) -> types.CallToolResult:
    """A tool error: `isError` and the JSON API's error body as text, no structured content."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(error_body(code, message), ensure_ascii=False))], is_error=True
    )


def _ask_text(body: dict[str, Any]) -> str:
    """The answer once: its summary and table (`content`, the first MAX_TABLE_ROWS rows), where the rest of
    the rows are, and the session id. Every row is in the structured content; repeating them here as JSON
    after the table doubled the text (50 rows: 11.5k characters)."""
    text = str(body.get("content", ""))
    rows = body.get("rows") or []
    if len(rows) > MAX_TABLE_ROWS:
        text += f"\n(the table shows {MAX_TABLE_ROWS} of the {len(rows)} rows; all are in the structured content)"
    if body.get("session_id"):
        text += f"\n\nsession_id: {body['session_id']} (pass it with the next ask to continue this conversation)"
    return text


def _json_result(body: dict[str, Any], text: str | None = None) -> types.CallToolResult:
    body = json.loads(json.dumps(body, default=str))  # dates, decimals -> JSON values
    return types.CallToolResult(
        content=[types.TextContent(text=text if text is not None else json.dumps(body, ensure_ascii=False))],
        structured_content=body,
    )


async def call_tool(
    holder: RuntimeHolder,
    principal: Principal,
    name: str,
    arguments: dict[str, Any] | None,
    observers: Sequence[calls.AnswerObserver] = (),
) -> types.CallToolResult:
    try:
        if name == ASK:
            ask = AskArgs.model_validate(arguments or {})
            body = await calls.ask(holder, principal, ask.question, ask.adapter, observers, ask.session_id)
            return _json_result(body, _ask_text(body))
        if name == EXPLAIN:
            args = QuestionArgs.model_validate(arguments or {})
            body = await calls.explain(holder, principal, args.question, args.adapter, observers)
            return _json_result(body)
        if name == LIST_TEMPLATES:
            targs = TemplatesArgs.model_validate(arguments or {})
            return _json_result(calls.templates(holder, principal, targs.adapter))
    except ValidationError as exc:
        return _error("bad_request", first_problem(exc, "arguments", "unknown argument"))
    except IntentRouterError as exc:
        return _error(exc.code, exc.message)
    except Exception:  # as the JSON API's 500: logged here, never the exception's text to the assistant
        log.exception("unhandled error in MCP tool %s", name)
        return _error("internal_error", "internal server error")
    return _error("not_found", f"unknown tool '{shown(name)}'")
