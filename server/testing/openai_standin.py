"""A loopback stand-in of OpenAI's chat completions API (`POST /v1/chat/completions`) for tests.

Real aiohttp server on 127.0.0.1 (random port), good enough for the real `openai` SDK (point it
at `api.api_url`, which ends in `/v1` like the real base URL). Same scripting as the other
stand-ins:

    async with OpenAIStandin(api_key="test-key") as api:
        api.enqueue(OpenAIReply.error(429))     # next request: HTTP 429
        ...                                     # later: OpenAIReply.scored() (the default)

`OpenAIReply.scored()` answers like a model under structured output: the message content is
`{"scores": [{"index", "score"}]}` from the scorer (default `word_overlap`) over the candidates
parsed out of the prompt. Failure modes: `content(text)` (any content string), `json_content(obj)`,
`refusal()`, `truncated()`, `malformed_json()`, `raw(status, body)`, `error(status)`;
`.delayed(seconds)` makes any reply slow. Error replies carry `RAW_TEXT_MARKER`.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from server.testing.anthropic_standin import (
    RAW_TEXT_MARKER,
    LoopbackServer,
    Scorer,
    ScriptedReply,
    parse_prompt,
    retry_headers,
    word_overlap,
)

__all__ = ["RAW_TEXT_MARKER", "OpenAIReply", "OpenAIStandin", "chat_prompt"]


def chat_prompt(body: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The question and candidate texts of a chat completions rerank request."""
    return parse_prompt({"messages": [m for m in body["messages"] if m.get("role") == "user"]})


class OpenAIReply(ScriptedReply):
    """OpenAI's answers: message content, refusal, truncation, its error shape."""

    @classmethod
    def content(cls, text: str, finish_reason: str = "stop") -> OpenAIReply:
        """A completion whose message content is exactly `text`."""
        return cls("content", payload=(text, finish_reason))

    @classmethod
    def json_content(cls, value: Any) -> OpenAIReply:
        return cls.content(json.dumps(value))

    @classmethod
    def refusal(cls) -> OpenAIReply:
        return cls("refusal", payload=f"I can't help with that. {RAW_TEXT_MARKER}")

    @classmethod
    def truncated(cls) -> OpenAIReply:
        """finish_reason length with the JSON cut short."""
        return cls.content('{"scores": [{"index": 0, "sc', finish_reason="length")

    @classmethod
    def malformed_json(cls) -> OpenAIReply:
        """HTTP 200 whose body is not JSON."""
        return cls.raw(200, f'{{"object": "chat.completion", "choices": [{RAW_TEXT_MARKER}'.encode())

    @classmethod
    def error(cls, status: int, message: str = RAW_TEXT_MARKER, retry_after: float | None = None) -> OpenAIReply:
        """An API error in OpenAI's shape: {"error": {"message", "type", "code"}}."""
        body = {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error"}}
        return cls("error", status=status, payload=(body, retry_headers(retry_after)))


class OpenAIStandin(LoopbackServer):
    """`POST /v1/chat/completions` on loopback; see the module docstring."""

    def __init__(self, *, api_key: str | None = None, scorer: Scorer = word_overlap) -> None:
        super().__init__()
        self.api_key = api_key
        self.scorer = scorer
        self.default = OpenAIReply.scored()
        self._queue: deque[OpenAIReply] = deque()
        self._ids = itertools.count(1)

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/v1"

    def enqueue(self, *replies: OpenAIReply) -> None:
        self._queue.extend(replies)

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/chat/completions", self._completions)]

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        recorded = await self.record(request)
        if self.api_key is not None and recorded.header("authorization") != f"Bearer {self.api_key}":
            return web.json_response(
                {"error": {"message": "Incorrect API key", "type": "invalid_request_error"}}, status=401
            )
        body = recorded.body
        if not isinstance(body, Mapping) or "model" not in body or not body.get("messages"):
            return web.json_response({"error": {"message": "model and messages are required"}}, status=400)
        reply = self._queue.popleft() if self._queue else self.default
        await self.pause(reply.delay)
        headers = {"x-request-id": f"req_standin_{next(self._ids)}"}
        if reply.kind == "raw":
            data, content_type = reply.payload
            return web.Response(status=reply.status, body=data, content_type=content_type)
        if reply.kind == "error":
            error_body, extra = reply.payload
            return web.json_response(error_body, status=reply.status, headers={**headers, **extra})
        if reply.kind == "refusal":
            return self._completion(body, {"content": None, "refusal": reply.payload}, "stop", headers)
        if reply.kind == "content":
            text, finish_reason = reply.payload
            return self._completion(body, {"content": text, "refusal": None}, finish_reason, headers)
        if (body.get("response_format") or {}).get("type") != "json_schema":  # no structured output: prose
            return self._completion(body, {"content": "The first one.", "refusal": None}, "stop", headers)
        question, candidates = chat_prompt(body)
        scores = (reply.payload or self.scorer)(question, candidates)
        content = json.dumps({"scores": [{"index": i, "score": round(float(s), 4)} for i, s in enumerate(scores)]})
        return self._completion(body, {"content": content, "refusal": None}, "stop", headers)

    def _completion(
        self, body: Mapping[str, Any], message: dict[str, Any], finish_reason: str, headers: dict[str, str]
    ) -> web.Response:
        completion = {
            "id": f"chatcmpl-standin{next(self._ids)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        return web.json_response(completion, headers=headers)
