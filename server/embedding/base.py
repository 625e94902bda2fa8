"""The embedding interface every provider implements, and its one error type.

Callers (template stores, the composite router, the CLI) only see `Embedder`: a stable
`model_id` to key caches and group children by model, a fixed `dim`, and L2-normalised
float32 rows so that a dot product is a cosine similarity.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from server.errors import IntentRouterError


class EmbeddingError(IntentRouterError):
    """An embedding could not be produced; `message` is short and safe to show to a client."""

    status = 503
    code = "embedding_unavailable"

    def __init__(self, message: str, *, transient: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.transient = transient  # worth retrying (server/resilience.py): timeouts, 429/5xx, connection errors
        self.retry_after = retry_after


@dataclass(frozen=True)
class TokenViews:
    """One text as a local encoder saw it: token ids (special tokens included) and the states of the
    last two layers, one row per token. The intent model pools them its own way (token_views.py)."""

    ids: np.ndarray  # (tokens,) int64
    last: np.ndarray  # (tokens, dim) float32
    penultimate: np.ndarray  # (tokens, dim) float32


class Embedder(ABC):
    """Turns texts into unit-length float32 vectors of a fixed dimension."""

    model_id: str
    dim: int
    # Local encoders can also hand out per-token states (TokenViews); remote APIs cannot.
    supports_token_views: bool = False

    @abstractmethod
    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed without blocking the event loop; returns shape (len(texts), dim)."""

    @abstractmethod
    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Same as `embed`, for synchronous callers (CLI, indexing, benchmarks)."""

    async def embed_query(self, text: str) -> np.ndarray:
        """One question's vector on the request path (a cache may serve it from memory only)."""
        return (await self.embed([text]))[0]

    async def embed_questions(self, texts: Sequence[str]) -> np.ndarray:
        """Many questions at once (fit-thresholds): the vectors `embed_query` would give each, in
        batched encoder calls, with what the request path keeps of a question (a local encoder: its
        token views for the intent model)."""
        return await self.embed(texts)

    def token_views_sync(self, texts: Sequence[str]) -> list[TokenViews]:
        """Per-token states of `texts` (only where `supports_token_views`)."""
        raise EmbeddingError(f"{self.model_id} does not expose token states")

    async def token_views(self, texts: Sequence[str]) -> list[TokenViews]:
        """Same as `token_views_sync`, without blocking the event loop."""
        raise EmbeddingError(f"{self.model_id} does not expose token states")

    async def close(self) -> None:  # noqa: B027 - providers without resources need nothing
        """Release sessions, connections or files held by this embedder."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"


def check_texts(texts: Sequence[str]) -> list[str]:
    """Reject non-string input early, with a message that names the offending position."""
    if isinstance(texts, str):
        raise EmbeddingError("embed() takes a sequence of strings, not a single string")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise EmbeddingError(f"text #{i} is {type(text).__name__}, expected str")
    return out


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Scale rows to unit length (zero rows stay zero) and return float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def empty(dim: int) -> np.ndarray:
    """The result of embedding no texts: shape (0, dim)."""
    return np.zeros((0, dim), dtype=np.float32)
