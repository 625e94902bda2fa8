"""A self-hosted cross-encoder server as a reranker, over the common `/rerank` HTTP API.

So an offline deployment can rerank without a cloud. Two request formats (`api_format`):
- `jina` (default; Jina, vLLM, Cohere-like servers): `POST {base_url}/rerank` with
  `{model?, query, documents, top_n}` -> `{"results": [{"index", "relevance_score"}, ...]}`;
- `tei` (Hugging Face text-embeddings-inference): `POST {base_url}/rerank` with `{query, texts}`
  -> `[{"index", "score"}, ...]`.
Either reply shape is accepted whatever was sent, then the shared reply rules apply. Retries
(`max_retries`) cover 429/502/503/504 (`transient_http_status`), timeouts and connection failures through
the shared policy (server/resilience.py): backoff with jitter, `Retry-After` honoured, all inside the
call's total timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import aiohttp

from ..resilience import RetrySettings, parse_retry_after, retry_call, transient_http_status
from .base import Reranker, RerankError, http_reason
from .replies import ReplyError, collect_scores
from .settings import RerankerSettings

log = logging.getLogger(__name__)

PROVIDER = "rerank_api"


class RerankApiReranker(Reranker):
    """Scores all candidates with one `POST /rerank` (plus retries on transient failures)."""

    provider = PROVIDER

    def __init__(self, name: str, settings: RerankerSettings, api_key: str | None) -> None:
        self.name = name
        self._settings = settings
        self._url = f"{str(settings.base_url).rstrip('/')}/rerank"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._session: aiohttp.ClientSession | None = None  # created inside the running loop
        self._retries = RetrySettings(max_attempts=settings.max_retries + 1, backoff_initial=0.1, backoff_max=2.0)

    def request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self._settings.api_format == "tei":
            return {"query": query, "texts": texts}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self._settings.model is not None:
            body["model"] = self._settings.model
        return body

    async def _score(self, query: str, texts: list[str]) -> list[float]:
        body = self.request_body(query, texts)
        try:
            async with asyncio.timeout(self._settings.total_timeout):
                return await retry_call(
                    lambda: self._attempt(body, len(texts)), self._retries, budget=self._settings.total_timeout
                )
        except TimeoutError:
            raise RerankError(PROVIDER, "timeout") from None

    async def _attempt(self, body: dict[str, Any], count: int) -> list[float]:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._settings.timeout))
        try:
            async with self._session.post(self._url, json=body, headers=self._headers) as response:
                status = response.status
                if status >= 400:
                    raise RerankError(
                        PROVIDER,
                        http_reason(status),
                        status=status,
                        transient=transient_http_status(status),
                        retry_after=parse_retry_after(response.headers.get("Retry-After")),
                    ) from None
                try:
                    payload = await response.json(content_type=None)
                except ValueError:
                    raise RerankError(PROVIDER, "malformed reply (not JSON)") from None
        except TimeoutError:  # this attempt's timeout (aiohttp's timeout errors are TimeoutErrors too)
            raise RerankError(PROVIDER, "timeout", transient=True) from None
        except aiohttp.ClientConnectionError:
            log.debug("rerank_api: connection to %s failed", self._url)
            raise RerankError(PROVIDER, "connection failed", transient=True) from None
        except aiohttp.ClientError as exc:
            log.debug("rerank_api failed: %s", type(exc).__name__)
            raise RerankError(PROVIDER, f"client error ({type(exc).__name__})") from None
        try:
            return parse_rerank_reply(payload, count)
        except ReplyError as exc:
            raise RerankError(PROVIDER, str(exc)) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def parse_rerank_reply(payload: object, count: int) -> list[float]:
    """TEI's `[{index, score}]` or Jina/Cohere's `{"results": [{index, relevance_score}]}` -> scores in order."""
    results = payload.get("results") if isinstance(payload, Mapping) else payload
    if not isinstance(results, list):
        raise ReplyError("malformed reply (no results list)")
    if not all(isinstance(entry, Mapping) for entry in results):
        raise ReplyError("malformed reply (result entry is not an object)")
    return collect_scores(((entry.get("index"), _score_of(entry)) for entry in results), count)


def _score_of(entry: Mapping[str, object]) -> object:
    return entry["relevance_score"] if "relevance_score" in entry else entry.get("score")
