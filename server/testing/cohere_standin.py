"""A loopback stand-in of Cohere's rerank API (`POST /v2/rerank`) for tests.

Real aiohttp server on 127.0.0.1 (random port), good enough for the real `cohere` SDK. Same
shape as the Anthropic stand-in: it records requests and answers from a script.

    async with CohereStandin(api_key="test-key") as api:
        client = cohere.AsyncClientV2(api_key="test-key", base_url=api.base_url, max_retries=0)
        api.enqueue(CohereReply.error(429))     # next request: HTTP 429
        ...                                     # later: CohereReply.scored() (the default)
        assert api.requests[-1].body["documents"] == [...]

`CohereReply.scored()` scores `documents` against `query` with the stand-in's scorer (default
`word_overlap`), sorts by score and honours `top_n`, like the real API. Failure modes:
`results([...])` (any results list: wrong types, missing or repeated indices, out-of-range
scores), `malformed_json()`, `raw(status, body)`, `error(status)`; `.delayed(seconds)` makes
any reply slow. Error replies carry `RAW_TEXT_MARKER`, so a test can assert it never leaks.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from server.testing.anthropic_standin import (
    RAW_TEXT_MARKER,
    LoopbackServer,
    RecordedRequest,
    Scorer,
    ScriptedReply,
    retry_headers,
    word_overlap,
)

__all__ = ["RAW_TEXT_MARKER", "CohereReply", "CohereStandin", "RecordedRequest", "word_overlap"]


class CohereReply(ScriptedReply):
    """Cohere's answers: exact results, malformed bodies, its error shape."""

    @classmethod
    def results(cls, results: Any) -> CohereReply:
        """HTTP 200 with exactly this `results` value (for malformed-result cases)."""
        return cls("results", payload=results)

    @classmethod
    def malformed_json(cls) -> CohereReply:
        """HTTP 200 whose body is not JSON."""
        return cls.raw(200, f'{{"results": [{RAW_TEXT_MARKER}'.encode())

    @classmethod
    def error(cls, status: int, message: str = RAW_TEXT_MARKER, retry_after: float | None = None) -> CohereReply:
        """An API error in Cohere's shape: {"message": ...}; `retry_after` seconds as `retry-after-ms`."""
        return cls("error", status=status, payload=({"message": message}, retry_headers(retry_after)))


class CohereStandin(LoopbackServer):
    """`POST /v2/rerank` on loopback; see the module docstring for the scripting API."""

    def __init__(self, *, api_key: str | None = None, scorer: Scorer = word_overlap) -> None:
        super().__init__()
        self.api_key = api_key  # when set, requests must carry "Authorization: Bearer <key>"
        self.scorer = scorer
        self.default = CohereReply.scored()  # served whenever the queue is empty
        self._queue: deque[CohereReply] = deque()
        self._ids = itertools.count(1)

    def enqueue(self, *replies: CohereReply) -> None:
        """Serve these replies, in order, to the next requests; then `default` again."""
        self._queue.extend(replies)

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v2/rerank", self._rerank)]

    async def _rerank(self, request: web.Request) -> web.StreamResponse:
        recorded = await self.record(request)
        if self.api_key is not None and recorded.header("authorization") != f"Bearer {self.api_key}":
            return web.json_response({"message": "invalid api token"}, status=401)
        problem = _request_problem(recorded.body)
        if problem:
            return web.json_response({"message": problem}, status=400)
        reply = self._queue.popleft() if self._queue else self.default
        await self.pause(reply.delay)
        if reply.kind == "raw":
            data, content_type = reply.payload
            return web.Response(status=reply.status, body=data, content_type=content_type)
        if reply.kind == "error":
            body, headers = reply.payload
            return web.json_response(body, status=reply.status, headers=headers)
        if reply.kind == "results":
            return self._response(reply.payload)
        body = recorded.body
        scores = list((reply.payload or self.scorer)(body["query"], list(body["documents"])))
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])[: body.get("top_n") or len(scores)]
        return self._response([{"index": i, "relevance_score": round(float(scores[i]), 4)} for i in ranked])

    def _response(self, results: Any) -> web.Response:
        return web.json_response(
            {
                "id": f"rerank_standin_{next(self._ids)}",
                "results": results,
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
            }
        )


def _request_problem(body: object) -> str | None:
    """What the real API would reject with 400 (only the checks our callers could get wrong)."""
    if not isinstance(body, Mapping):
        return "body must be a JSON object"
    for field in ("model", "query", "documents"):
        if field not in body:
            return f"{field} is required"
    documents = body["documents"]
    if not isinstance(documents, list) or not all(isinstance(d, str) for d in documents):
        return "documents must be a list of strings"
    top_n = body.get("top_n")
    if top_n is not None and (not isinstance(top_n, int) or top_n < 1):
        return "top_n must be a positive integer"
    return None
