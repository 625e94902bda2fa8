"""Embeddings from any server that speaks OpenAI's `POST /embeddings` (OpenAI, Ollama, vLLM, TEI...).

Errors become EmbeddingError with a short reason (status class, timeout, malformed reply); the
provider's own text goes to the log only, never to a client. Timeouts, connection failures and
the statuses of `transient_http_status` (429/502/503/504, with `Retry-After`) are transient and retried
by the shared policy (server/resilience.py, `embedding.retries`), within the request's deadline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import numpy as np

from server.embedding.base import Embedder, EmbeddingError, check_texts, empty, l2_normalise
from server.resilience import RetrySettings, parse_retry_after, retry_call, transient_http_status

log = logging.getLogger(__name__)

_STATUS_REASONS = {
    400: "rejected the request",
    401: "rejected the API key",
    403: "refused access",
    404: "does not know this endpoint or model",
    413: "found the request too large",
    429: "is rate limiting us",
}


class OpenAICompatibleEmbedder(Embedder):
    """One aiohttp session per embedder (per event loop), closed by close(); dim is learned from the first reply."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
        retries: RetrySettings | None = None,
    ) -> None:
        base = base_url.rstrip("/")
        # the id names the model in cache keys, /health and logs: never the credentials a URL may carry
        parts = urlsplit(base)
        shown = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        self.model_id = f"openai_compatible:{model}@{shown}"
        self.model = model
        self.url = f"{base}/embeddings"
        self.batch_size = batch_size
        self.timeout = timeout
        self.retries = retries or RetrySettings(max_attempts=1)
        self.attempts = 0  # requests sent, retries included
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._dim = 0
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    @property
    def dim(self) -> int:  # type: ignore[override]
        """0 until the first reply tells us the model's dimension."""
        return self._dim

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return empty(self._dim)
        return await self._embed_with(self._get_session(), texts)

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Runs a private event loop with a short-lived session in a helper thread, so it also works
        when the calling thread already runs a loop."""
        texts = check_texts(texts)
        if not texts:
            return empty(self._dim)

        async def once() -> np.ndarray:
            async with self._new_session() as session:
                return await self._embed_with(session, texts)

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-sync") as pool:
            return pool.submit(asyncio.run, once()).result()

    async def close(self) -> None:
        session, self._session, self._session_loop = self._session, None, None
        if session is not None and not session.closed:
            await session.close()

    def _new_session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout), headers=self._headers)

    def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            # A session is bound to the loop that made it; a new loop (tests, reload) needs a new one.
            self._session, self._session_loop = self._new_session(), loop
        return self._session

    async def _embed_with(self, session: aiohttp.ClientSession, texts: list[str]) -> np.ndarray:
        parts = [
            await self._post(session, texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)
        ]
        return l2_normalise(np.concatenate(parts))

    async def _post(self, session: aiohttp.ClientSession, batch: list[str]) -> np.ndarray:
        budget = self.timeout * self.retries.max_attempts  # outside a request; a request's deadline wins
        return await retry_call(lambda: self._post_once(session, batch), self.retries, budget=budget)

    async def _post_once(self, session: aiohttp.ClientSession, batch: list[str]) -> np.ndarray:
        self.attempts += 1
        try:
            async with session.post(self.url, json={"model": self.model, "input": batch}) as resp:
                body = await resp.read()
                status = resp.status
                retry_after = parse_retry_after(resp.headers.get("Retry-After"))
        except TimeoutError as exc:
            raise EmbeddingError(f"embedding service timed out after {self.timeout:g} s", transient=True) from exc
        except aiohttp.ClientError as exc:
            raise EmbeddingError(f"cannot reach the embedding service ({type(exc).__name__})", transient=True) from exc
        if status != 200:
            log.warning("embedding service %s answered %d: %.300r", self.url, status, body)
            reason = _STATUS_REASONS.get(status, "had a server error" if status >= 500 else "refused the request")
            raise EmbeddingError(
                f"embedding service {reason} (HTTP {status})",
                transient=transient_http_status(status),
                retry_after=retry_after,
            )
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            log.warning("embedding service %s sent non-JSON: %.300r", self.url, body)
            raise EmbeddingError("embedding service sent a reply that is not JSON") from exc
        return self._parse(payload, len(batch))

    def _parse(self, payload: Any, expected: int) -> np.ndarray:
        """Accept `{"data": [{"embedding": [...], "index": i}, ...]}`, in any order, one row per input."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            got = len(data) if isinstance(data, list) else "no"
            raise EmbeddingError(f"embedding service reply is malformed ({got} embeddings for {expected} texts)")
        rows: list[list[float] | None] = [None] * expected
        for pos, item in enumerate(data):
            vector = item.get("embedding") if isinstance(item, dict) else None
            index = item.get("index", pos) if isinstance(item, dict) else pos
            if not isinstance(vector, list) or not vector or not isinstance(index, int) or not 0 <= index < expected:
                raise EmbeddingError("embedding service reply is malformed (bad 'data' item)")
            rows[index] = vector
        if any(r is None for r in rows):
            raise EmbeddingError("embedding service reply is malformed (duplicate indexes)")
        try:
            matrix = np.array(rows, dtype=np.float32)
        except (ValueError, TypeError) as exc:
            raise EmbeddingError("embedding service reply is malformed (ragged or non-numeric vectors)") from exc
        if matrix.ndim != 2 or not np.isfinite(matrix).all() or math.prod(matrix.shape) == 0:
            raise EmbeddingError("embedding service reply is malformed (non-finite values)")
        if self._dim and matrix.shape[1] != self._dim:
            raise EmbeddingError(f"embedding service changed dimension from {self._dim} to {matrix.shape[1]}")
        self._dim = int(matrix.shape[1])
        return matrix
