"""The reranker contract the composite router codes against.

A reranker judges, for one question, how well each candidate template answers it, on a 0..1
scale, in ONE provider call. Every failure (network, HTTP status, timeout, a reply we cannot
trust) becomes a `RerankError` whose message is ours, short and safe to show in routing
metadata: raw provider text never leaves this package.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

RerankKey = tuple[str, str]  # (adapter name, template id)


@dataclass(frozen=True)
class RerankItem:
    """One candidate: who owns it, and the text the reranker judges (description + nl_examples)."""

    key: RerankKey
    text: str


class RerankError(Exception):
    """A reranking call failed; `str()` is `"<provider>: <reason>"`, never provider text."""

    def __init__(
        self,
        provider: str,
        reason: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        transient: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{provider}: {reason}")
        self.provider = provider
        self.reason = reason
        self.status = status  # HTTP status when the provider answered with an error status
        self.request_id = request_id  # provider's request id, for support tickets
        self.transient = transient  # worth another attempt (server/resilience.py), for providers we retry ourselves
        self.retry_after = retry_after


class Reranker(ABC):
    """Scores candidates against a question with one provider call per `rerank`."""

    name: str  # the reranker's name in the `rerankers:` config section
    provider: str  # "anthropic" | "cohere" | "openai" | "rerank_api"

    async def rerank(self, query: str, items: Sequence[RerankItem]) -> dict[RerankKey, float]:
        """Score every item in [0, 1]; raises RerankError (never a partial result)."""
        if not items:
            return {}
        keys = [item.key for item in items]
        if len(set(keys)) != len(keys):
            raise ValueError("rerank items must have distinct keys")
        scores = await self._score(query, [item.text for item in items])
        if len(scores) != len(items):
            raise RerankError(self.provider, "malformed reply (score count differs from candidates)")
        result: dict[RerankKey, float] = {}
        for key, score in zip(keys, scores, strict=True):
            if not math.isfinite(score):
                raise RerankError(self.provider, "malformed reply (score is not a finite number)")
            result[key] = min(1.0, max(0.0, score))
        return result

    @abstractmethod
    async def _score(self, query: str, texts: list[str]) -> list[float]:
        """One provider call; returns one score per text, in order; raises RerankError."""

    @abstractmethod
    async def close(self) -> None:
        """Release the provider client's connections."""


_STATUS_HINTS = {
    401: "unauthorized",
    403: "forbidden",
    404: "not found",
    408: "request timeout",
    413: "request too large",
    429: "rate limited",
    529: "overloaded",
}


def http_reason(status: int) -> str:
    """Our short wording for an HTTP error status, e.g. "HTTP 429 (rate limited)"."""
    hint = _STATUS_HINTS.get(status) or ("server error" if status >= 500 else None)
    return f"HTTP {status} ({hint})" if hint else f"HTTP {status}"


def sdk_request_id(reply: object) -> str | None:
    """The provider's request id an SDK reply object carries (`_request_id`, openai/anthropic SDKs), if any."""
    request_id = getattr(reply, "_request_id", None)
    return request_id if isinstance(request_id, str) else None
