"""A self-hosted cross-encoder server as a reranker, over the common `/rerank` HTTP API.

So an offline deployment can rerank without a cloud. Two request formats (`api_format`):
- `jina` (default; Jina, vLLM, Cohere-like servers): `POST {base_url}/rerank` with
  `{model?, query, documents, top_n}` -> `{"results": [{"index", "relevance_score"}, ...]}`;
- `tei` (Hugging Face text-embeddings-inference): `POST {base_url}/rerank` with `{query, texts}`
  -> `[{"index", "score"}, ...]`.
Either reply shape is accepted whatever was sent, then the shared reply rules apply. Retries
(`max_retries`) cover 429, 5xx and connection failures, honour `Retry-After`, and stay inside
the call's total timeout.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from typing import Any

import aiohttp

from .base import Reranker, RerankError, http_reason
from .replies import ReplyError, collect_scores
from .settings import RerankerSettings

log = logging.getLogger(__name__)

PROVIDER = "rerank_api"
_BACKOFF_BASE = 0.1  # seconds before the first retry; doubled each time, with full jitter


class _Retryable(Exception):
    def __init__(self, error: RerankError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class RerankApiReranker(Reranker):
    """Scores all candidates with one `POST /rerank` (plus retries on transient failures)."""

    provider = PROVIDER

    def __init__(self, name: str, settings: RerankerSettings, api_key: str | None) -> None:
        self.name = name
        self._settings = settings
        self._url = f"{str(settings.base_url).rstrip('/')}/rerank"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._session: aiohttp.ClientSession | None = None  # created inside the running loop

    def request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self._settings.api_format == "tei":
            return {"query": query, "texts": texts}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self._settings.model is not None:
            body["model"] = self._settings.model
        return body

    async def _score(self, query: str, texts: list[str]) -> list[float]:
        body = self.request_body(query, texts)
        deadline = time.monotonic() + self._settings.total_timeout
        attempt = 0
        try:
            async with asyncio.timeout(self._settings.total_timeout):
                while True:
                    try:
                        return await self._attempt(body, len(texts))
                    except _Retryable as failed:
                        attempt += 1
                        wait = _backoff(attempt, failed.retry_after)
                        if attempt > self._settings.max_retries or time.monotonic() + wait >= deadline:
                            raise failed.error from None
                        await asyncio.sleep(wait)
        except TimeoutError:
            raise RerankError(PROVIDER, "timeout") from None

    async def _attempt(self, body: dict[str, Any], count: int) -> list[float]:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._settings.timeout))
        try:
            async with self._session.post(self._url, json=body, headers=self._headers) as response:
                status = response.status
                if status >= 400:
                    error = RerankError(PROVIDER, http_reason(status), status=status)
                    if status == 429 or status >= 500:
                        raise _Retryable(error, _retry_after(response.headers.get("Retry-After")))
                    raise error from None
                try:
                    payload = await response.json(content_type=None)
                except ValueError:
                    raise RerankError(PROVIDER, "malformed reply (not JSON)") from None
        except TimeoutError:  # this attempt's timeout (aiohttp's timeout errors are TimeoutErrors too)
            raise _Retryable(RerankError(PROVIDER, "timeout")) from None
        except aiohttp.ClientConnectionError:
            log.debug("rerank_api: connection to %s failed", self._url)
            raise _Retryable(RerankError(PROVIDER, "connection failed")) from None
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


def _retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds (the HTTP-date form is not used by rerank servers)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _backoff(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return retry_after
    return random.uniform(0, _BACKOFF_BASE * 2 ** (attempt - 1))
