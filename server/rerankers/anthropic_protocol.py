"""What we send Claude to score candidates, and how we judge its reply.

One request scores every candidate: the question and the candidates go in a user message
(`llm_prompt.build_user_message`), and Claude must answer by calling the `score_candidates`
tool (forced with `tool_choice`).

Reply rules (anything else raises `ReplyError` with a short reason of ours):
- a refusal, a truncated reply (`max_tokens`) or a reply without the tool call is rejected;
- `scores` must be a list of `{index: int, score: number}`; extra keys in an entry are ignored;
- then the shared rules of `replies.collect_scores`: every candidate scored exactly once or the
  whole reply is rejected; scores outside 0..1 are clamped by `Reranker.rerank`.

Strict tool mode is not used: its grammar does not take numeric bounds, and we validate the
reply ourselves either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .llm_prompt import INSTRUCTIONS, build_user_message, parse_scores
from .replies import ReplyError

if TYPE_CHECKING:  # the SDK's request types; the SDK itself is imported only by the reranker
    from anthropic.types import ToolChoiceToolParam, ToolParam

__all__ = ["SYSTEM_PROMPT", "TOOL", "TOOL_CHOICE", "TOOL_NAME", "build_user_message", "parse_reply"]

TOOL_NAME = "score_candidates"

SYSTEM_PROMPT = f"{INSTRUCTIONS} Reply only by calling {TOOL_NAME} once, with one score for every candidate index."

TOOL: ToolParam = {
    "name": TOOL_NAME,
    "description": "Report a relevance score between 0 and 1 for every candidate, by index.",
    "input_schema": {
        "type": "object",
        "properties": {
            "scores": {
                "type": "array",
                "description": "One entry per candidate, covering every index exactly once.",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer", "minimum": 0},
                        "score": {"type": "number", "minimum": 0, "maximum": 1},
                    },
                    "required": ["index", "score"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["scores"],
        "additionalProperties": False,
    },
}

TOOL_CHOICE: ToolChoiceToolParam = {"type": "tool", "name": TOOL_NAME, "disable_parallel_tool_use": True}


def parse_reply(stop_reason: object, content: object, count: int) -> list[float]:
    """Scores in candidate order from a Messages API reply, or ReplyError."""
    if not isinstance(content, list):
        raise ReplyError("malformed reply (no content)")
    if stop_reason == "refusal":
        raise ReplyError("refusal")
    if stop_reason == "max_tokens":
        raise ReplyError("reply truncated (max_tokens too small)")
    calls = [b for b in content if getattr(b, "type", None) == "tool_use" and getattr(b, "name", None) == TOOL_NAME]
    if not calls:
        kinds = {getattr(b, "type", "?") for b in content}
        raise ReplyError("no tool call in reply (text only)" if kinds == {"text"} else "no tool call in reply")
    if len(calls) > 1:
        raise ReplyError("malformed reply (more than one tool call)")
    return parse_scores(getattr(calls[0], "input", None), count)
