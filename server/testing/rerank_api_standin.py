"""A loopback stand-in of a self-hosted `/rerank` server (text-embeddings-inference, vLLM, Jina).

Real aiohttp server on 127.0.0.1 (random port). `POST /rerank` answers in the shape of the
request: a body with `texts` gets TEI's reply `[{"index", "score"}]` (sorted by score), a body
with `documents` gets the Jina/vLLM reply `{"results": [{"index", "relevance_score"}], ...}`
honouring `top_n`. Scripting as in the other stand-ins: `RerankApiReply.scored()` (default),
`results(any)` (the scores part, wrapped per format), `body(any)` (the whole JSON body),
`malformed_json()`, `raw(status, body)`, `error(status, retry_after=)` (seconds, sent as the
standard `Retry-After` header); `.delayed(seconds)`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from server.testing.anthropic_standin import RAW_TEXT_MARKER, LoopbackServer, Scorer, ScriptedReply, word_overlap

__all__ = ["RAW_TEXT_MARKER", "RerankApiReply", "RerankApiStandin"]


class RerankApiReply(ScriptedReply):
    """A rerank server's answers: exact results or body, malformed bodies, its error shape."""

    @classmethod
    def results(cls, results: Any) -> RerankApiReply:
        return cls("results", payload=results)

    @classmethod
    def body(cls, body: Any) -> RerankApiReply:
        return cls("body", payload=body)

    @classmethod
    def malformed_json(cls) -> RerankApiReply:
        return cls.raw(200, f'[{{"index": 0, {RAW_TEXT_MARKER}'.encode())

    @classmethod
    def error(cls, status: int, retry_after: float | None = None) -> RerankApiReply:
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        return cls("error", status=status, payload=({"error": RAW_TEXT_MARKER, "error_type": "Overloaded"}, headers))


class RerankApiStandin(LoopbackServer):
    """`POST /rerank` on loopback; see the module docstring."""

    def __init__(self, *, api_key: str | None = None, scorer: Scorer = word_overlap) -> None:
        super().__init__()
        self.api_key = api_key
        self.scorer = scorer
        self.default = RerankApiReply.scored()
        self._queue: deque[RerankApiReply] = deque()

    def enqueue(self, *replies: RerankApiReply) -> None:
        self._queue.extend(replies)

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/rerank", self._rerank), web.post("/v1/rerank", self._rerank)]

    async def _rerank(self, request: web.Request) -> web.StreamResponse:
        recorded = await self.record(request)
        if self.api_key is not None and recorded.header("authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": "unauthorized"}, status=401)
        body = recorded.body
        if not isinstance(body, Mapping) or "query" not in body:
            return web.json_response({"error": "query is required", "error_type": "Validation"}, status=422)
        tei = "texts" in body
        docs = body.get("texts" if tei else "documents")
        if not isinstance(docs, list) or not all(isinstance(d, str) for d in docs):
            return web.json_response({"error": "texts/documents must be a list of strings"}, status=422)
        reply = self._queue.popleft() if self._queue else self.default
        await self.pause(reply.delay)
        if reply.kind == "raw":
            data, content_type = reply.payload
            return web.Response(status=reply.status, body=data, content_type=content_type)
        if reply.kind == "error":
            error_body, headers = reply.payload
            return web.json_response(error_body, status=reply.status, headers=headers)
        if reply.kind == "body":
            return web.json_response(reply.payload)
        if reply.kind == "results":
            results = reply.payload
        else:
            scores = list((reply.payload or self.scorer)(body["query"], list(docs)))
            ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
            if not tei:
                ranked = ranked[: body.get("top_n") or len(ranked)]
            field = "score" if tei else "relevance_score"
            results = [{"index": i, field: round(float(scores[i]), 4)} for i in ranked]
        if tei:
            return web.json_response(results)
        return web.json_response({"model": body.get("model") or "standin", "results": results, "usage": {}})
