"""A loopback stand-in of the Anthropic Messages API (`POST /v1/messages`) for tests.

Real aiohttp server on 127.0.0.1 (random port), good enough for the real `anthropic` SDK.
It records every request and answers from a script, so a test can assert the exact request
and choose the reply:

    async with AnthropicStandin(api_key="test-key") as api:
        client = anthropic.AsyncAnthropic(api_key="test-key", base_url=api.base_url, max_retries=0)
        api.enqueue(Reply.error(429))           # next request: HTTP 429
        ...                                     # later requests: Reply.scored() (the default)
        assert len(api.requests) == 2
        question, candidates = parse_prompt(api.requests[-1].body)

`Reply.scored()` answers like the model would: a forced `score_candidates` tool call with one
score per candidate from a scorer (default `word_overlap`, so scores mean something). Other
replies script the failure modes: `tool_input(...)` (any tool input: wrong types, missing
indices, out-of-range scores), `text()`, `refusal()`, `truncated()`, `malformed_json()`,
`error(status)`, `overloaded()`; any reply can be `.delayed(seconds)` to test timeouts.
Error and text replies carry `RAW_TEXT_MARKER`, so a test can assert it never leaks.

The shared pieces (`RecordedRequest`, `LoopbackServer`, `word_overlap`, `RAW_TEXT_MARKER`, `retry_headers`)
are reused by the Cohere stand-in.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import html
import itertools
import json
import re
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from aiohttp import web

Scorer = Callable[[str, list[str]], Sequence[float]]

RAW_TEXT_MARKER = "RAW-PROVIDER-TEXT-do-not-leak"

# fmt: off
_STOPWORDS = frozenset({
    "a", "an", "and", "are", "all", "any", "by", "can", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "me", "my", "of", "on", "or", "show", "the", "to", "what", "which", "who", "with",
    "list", "get", "find", "give", "tell", "there", "their", "this", "that",
})
# fmt: on


def _words(text: str) -> set[str]:
    words = (w.lower() for w in re.findall(r"[A-Za-z0-9]+", text))
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words if w not in _STOPWORDS}


def word_overlap(query: str, documents: list[str]) -> list[float]:
    """Share of the query's content words found in each document: a cheap, meaningful 0..1 score."""
    query_words = _words(query)
    if not query_words:
        return [0.0 for _ in documents]
    return [len(query_words & _words(doc)) / len(query_words) for doc in documents]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stand-in received it (header names lower-cased)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class LoopbackServer(ABC):
    """Starts an aiohttp app on 127.0.0.1:<random port>, records requests, stops fast."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self.base_url = ""

    @abstractmethod
    def routes(self) -> list[web.RouteDef]:
        """The API's routes; handlers call `record` first."""

    async def start(self) -> Self:
        app = web.Application()
        app.add_routes(self.routes())
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"
        return self

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    async def record(self, request: web.Request) -> RecordedRequest:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = RecordedRequest(
            request.method, request.path, {k.lower(): v for k, v in request.headers.items()}, body, raw
        )
        self.requests.append(recorded)
        return recorded

    async def pause(self, seconds: float) -> None:
        """Sleep like a slow provider, but wake at once when the server stops."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), seconds)

    @staticmethod
    def bearer_or_key(recorded: RecordedRequest) -> str | None:
        auth = recorded.header("authorization") or ""
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else recorded.header("x-api-key")


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer of a provider stand-in; build with the class methods. Each provider's reply
    class adds the answers in its own API's shape (errors, malformed bodies, ...)."""

    kind: str
    status: int = 200
    payload: Any = None
    delay: float = 0.0

    @classmethod
    def scored(cls, scorer: Scorer | None = None) -> Self:
        """The provider's answer, scored by `scorer` (default: the stand-in's)."""
        return cls("scored", payload=scorer)

    @classmethod
    def raw(cls, status: int, body: bytes, content_type: str = "application/json") -> Self:
        """Any status and body, byte for byte."""
        return cls("raw", status=status, payload=(body, content_type))

    def delayed(self, seconds: float) -> Self:
        """The same reply, sent after `seconds` (a slow provider)."""
        return dataclasses.replace(self, delay=seconds)


class Reply(ScriptedReply):
    """Anthropic's answers: a score_candidates tool call, text, refusal, truncation, its error shape."""

    @classmethod
    def tool_input(cls, tool_input: Any, stop_reason: str = "tool_use") -> Reply:
        """A score_candidates call with exactly this input (for malformed-input cases)."""
        return cls("tool_input", payload=(tool_input, stop_reason))

    @classmethod
    def text(cls, text: str = f"The first candidate fits best. {RAW_TEXT_MARKER}") -> Reply:
        """A plain text answer instead of the tool call."""
        return cls("text", payload=text)

    @classmethod
    def refusal(cls) -> Reply:
        return cls("refusal", payload=f"I can't help with that. {RAW_TEXT_MARKER}")

    @classmethod
    def truncated(cls) -> Reply:
        """stop_reason max_tokens with a tool call cut short (half the scores)."""
        return cls("truncated")

    @classmethod
    def malformed_json(cls) -> Reply:
        """HTTP 200 whose body is not JSON."""
        return cls.raw(200, f'{{"type": "message", "content": [{RAW_TEXT_MARKER}'.encode())

    @classmethod
    def error(
        cls,
        status: int,
        error_type: str | None = None,
        message: str = RAW_TEXT_MARKER,
        retry_after: float | None = None,
    ) -> Reply:
        """An API error in Anthropic's shape: {"type": "error", "error": {"type", "message"}}.

        `retry_after` (seconds) is sent as `retry-after-ms`, which the SDK honours between retries.
        """
        kind = error_type or _ERROR_TYPES.get(status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return cls("error", status=status, payload=(body, retry_headers(retry_after)))

    @classmethod
    def overloaded(cls) -> Reply:
        return cls.error(529, "overloaded_error")


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def retry_headers(retry_after: float | None) -> dict[str, str]:
    """`retry-after-ms` as both SDKs read it; empty when no hint is wanted."""
    return {} if retry_after is None else {"retry-after-ms": str(int(retry_after * 1000))}


_QUESTION = re.compile(r"<question>(.*?)</question>", re.S)
_CANDIDATE = re.compile(r'<candidate index="(\d+)">(.*?)</candidate>', re.S)


def parse_prompt(body: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The question and candidate texts (in index order) of a rerank request body."""
    content = body["messages"][-1]["content"]
    if not isinstance(content, str):
        content = "".join(block.get("text", "") for block in content if isinstance(block, Mapping))
    question = _QUESTION.search(content)
    candidates = sorted((int(i), html.unescape(t)) for i, t in _CANDIDATE.findall(content))
    return html.unescape(question.group(1)) if question else "", [text for _, text in candidates]


class AnthropicStandin(LoopbackServer):
    """`POST /v1/messages` on loopback; see the module docstring for the scripting API."""

    def __init__(self, *, api_key: str | None = None, scorer: Scorer = word_overlap) -> None:
        super().__init__()
        self.api_key = api_key  # when set, requests must carry it (x-api-key or Bearer)
        self.scorer = scorer
        self.default = Reply.scored()  # served whenever the queue is empty
        self._queue: deque[Reply] = deque()
        self._ids = itertools.count(1)

    def enqueue(self, *replies: Reply) -> None:
        """Serve these replies, in order, to the next requests; then `default` again."""
        self._queue.extend(replies)

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/messages", self._messages)]

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        recorded = await self.record(request)
        if self.api_key is not None and self.bearer_or_key(recorded) != self.api_key:
            return web.json_response(_error_body("authentication_error", "invalid x-api-key"), status=401)
        problem = _request_problem(recorded)
        if problem:
            return web.json_response(_error_body("invalid_request_error", problem), status=400)
        reply = self._queue.popleft() if self._queue else self.default
        await self.pause(reply.delay)
        return self._render(reply, recorded.body)

    def _render(self, reply: Reply, body: Mapping[str, Any]) -> web.StreamResponse:
        if reply.kind == "raw":
            data, content_type = reply.payload
            return web.Response(status=reply.status, body=data, content_type=content_type)
        if reply.kind == "error":
            error_body, headers = reply.payload
            headers = {**headers, "request-id": f"req_standin_{next(self._ids)}"}
            return web.json_response(error_body, status=reply.status, headers=headers)
        if reply.kind == "text":
            return self._message(body, [{"type": "text", "text": reply.payload}], "end_turn")
        if reply.kind == "refusal":
            return self._message(body, [{"type": "text", "text": reply.payload}], "refusal")
        if reply.kind == "tool_input":
            tool_input, stop_reason = reply.payload
            return self._message(body, [self._tool_use(body, tool_input)], stop_reason)
        scores = self._scores(body, reply.payload)
        if scores is None:  # not forced to call a tool: a model would just talk
            return self._message(body, [{"type": "text", "text": "Scores follow in prose."}], "end_turn")
        entries = [{"index": i, "score": round(float(s), 4)} for i, s in enumerate(scores)]
        if reply.kind == "truncated":
            return self._message(body, [self._tool_use(body, {"scores": entries[: len(entries) // 2]})], "max_tokens")
        return self._message(body, [self._tool_use(body, {"scores": entries})], "tool_use")

    def _scores(self, body: Mapping[str, Any], scorer: Scorer | None) -> list[float] | None:
        choice = body.get("tool_choice") or {}
        if choice.get("type") != "tool":
            return None
        question, candidates = parse_prompt(body)
        return list((scorer or self.scorer)(question, candidates))

    def _tool_use(self, body: Mapping[str, Any], tool_input: Any) -> dict[str, Any]:
        name = (body.get("tool_choice") or {}).get("name") or "score_candidates"
        return {
            "type": "tool_use",
            "id": f"toolu_standin_{next(self._ids)}",
            "name": name,
            "input": tool_input,
        }

    def _message(self, body: Mapping[str, Any], content: list[dict[str, Any]], stop_reason: str) -> web.Response:
        message = {
            "id": f"msg_standin_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 20},
        }
        return web.json_response(message, headers={"request-id": f"req_standin_{next(self._ids)}"})


def _request_problem(recorded: RecordedRequest) -> str | None:
    """What the real API would reject with 400 (only the checks our callers could get wrong)."""
    body = recorded.body
    if not isinstance(body, Mapping):
        return "body must be a JSON object"
    if not recorded.header("anthropic-version"):
        return "anthropic-version header is required"
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            return f"{field}: Field required"
    if not isinstance(body["messages"], list) or not body["messages"]:
        return "messages: at least one message is required"
    return None
