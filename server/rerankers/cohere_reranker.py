"""Cohere's rerank endpoint as a reranker: one `rerank` call for all candidates.

Cohere already returns `relevance_score` in 0..1 per document index; we ask for every document
(`top_n` = all) and apply the shared reply rules (`replies.collect_scores`). The SDK parses
replies without validating them, so we check types ourselves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import cohere
import httpx
from cohere.core.api_error import ApiError
from cohere.core.parse_error import ParsingError

from .base import Reranker, RerankError, http_reason
from .replies import ReplyError, collect_scores
from .settings import RerankerSettings

log = logging.getLogger(__name__)

PROVIDER = "cohere"


class CohereReranker(Reranker):
    """Scores all candidates with one `AsyncClientV2.rerank` call."""

    provider = PROVIDER

    def __init__(self, name: str, settings: RerankerSettings, api_key: str) -> None:
        self.name = name
        self._settings = settings
        # Our own httpx client, so that close() is a public call rather than SDK internals.
        self._http = httpx.AsyncClient(timeout=settings.timeout)
        self._client = cohere.AsyncClientV2(
            api_key=api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            httpx_client=self._http,
            log_warning_experimental_features=False,
        )

    async def _score(self, query: str, texts: list[str]) -> list[float]:
        try:
            async with asyncio.timeout(self._settings.total_timeout):
                response = await self._client.rerank(
                    model=self._settings.model_name, query=query, documents=texts, top_n=len(texts)
                )
        except Exception as exc:  # every SDK/transport failure is mapped, none escapes raw
            raise _map_error(exc) from None
        try:
            return parse_results(getattr(response, "results", None), len(texts))
        except ReplyError as exc:
            raise RerankError(PROVIDER, str(exc)) from None

    async def close(self) -> None:
        await self._http.aclose()


def parse_results(results: object, count: int) -> list[float]:
    """`[{index, relevance_score}, ...]` (objects or dicts) -> scores in document order."""
    if not isinstance(results, list):
        raise ReplyError("malformed reply (no results list)")
    return collect_scores(((_field(r, "index"), _field(r, "relevance_score")) for r in results), count)


def _field(result: object, name: str) -> object:
    return result.get(name) if isinstance(result, Mapping) else getattr(result, name, None)


def _map_error(exc: Exception) -> RerankError:
    """Our short reason for an SDK exception; the provider's text is neither kept nor logged."""
    log.debug("cohere rerank failed: %s", type(exc).__name__)
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return RerankError(PROVIDER, "timeout")
    if isinstance(exc, httpx.TransportError):
        return RerankError(PROVIDER, "connection failed")
    if isinstance(exc, ParsingError):
        return RerankError(PROVIDER, "malformed reply (not a valid rerank response)")
    if isinstance(exc, ApiError):
        status = exc.status_code
        if status is None or 200 <= status < 300:  # a success status whose body is not JSON
            return RerankError(PROVIDER, "malformed reply (not a valid rerank response)")
        return RerankError(PROVIDER, http_reason(status), status=status)
    if isinstance(exc, ValueError | TypeError):
        return RerankError(PROVIDER, "malformed reply (not a valid rerank response)")
    return RerankError(PROVIDER, f"client error ({type(exc).__name__})")
