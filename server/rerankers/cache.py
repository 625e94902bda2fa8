"""Rerank scores remembered per question and candidate, so a repeated question costs no provider call.

An entry's id (`entry_id`) is a digest of the reranker's identity (provider, model and `base_url`, the
instructions for a chat model), the question, the candidate's adapter and template
id, and the very text the reranker judged (description and examples). So scores of different models
never mix, and a reload that changes a template's text can never serve its old score: its id changes
with the text. Nothing has to be cleared, in this process or in Redis.

Two backends behind one interface (`ScoreCache`): `RerankCache` in this process (TTL + LRU bound, the
clock injectable so tests need not sleep), and `RedisRerankCache` shared by every replica
(`shared_cache.py`).
"""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .base import RerankKey
from .llm_prompt import INSTRUCTIONS
from .settings import RerankerSettings

_CHAT_PROVIDERS = ("anthropic", "openai")


def reranker_identity(settings: RerankerSettings) -> str:
    """What decides a reranker's scores: the provider, the model and the server that runs it (a
    `base_url`: a self-hosted server, or an OpenAI-compatible one serving its own model under a name
    another server also uses); for a chat model, the instructions it is given."""
    parts = [settings.provider, settings.model or "", str(settings.base_url or "")]
    if settings.provider == "rerank_api":
        parts.append(settings.api_format)
    if settings.provider in _CHAT_PROVIDERS:
        parts.append(hashlib.sha256(INSTRUCTIONS.encode()).hexdigest()[:16])
    return "\x1f".join(parts)


def entry_id(identity: str, question: str, key: RerankKey, text: str) -> str:
    """The cache id of one candidate's score for one question (see the module docstring)."""
    digest = hashlib.sha256()
    for part in (identity, question, key[0], key[1], text):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()[:40]


class ScoreCache(ABC):
    """Scores by entry id. A backend that fails answers with misses, never an error."""

    @abstractmethod
    async def get_many(self, ids: Iterable[str]) -> dict[str, float]:
        """Scores of those ids that have a live entry."""

    @abstractmethod
    async def put_many(self, scores: Mapping[str, float]) -> None:
        """Remember scores, within the backend's bounds."""


@dataclass(frozen=True)
class RerankCacheStats:
    hits: int
    misses: int
    evictions: int  # dropped to respect max_entries
    expirations: int  # dropped because their TTL passed
    size: int


class RerankCache(ScoreCache):
    """In this process: TTL + LRU-bounded map of scores."""

    def __init__(
        self, ttl_seconds: float, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, float]] = OrderedDict()  # id -> (expires, score)
        self._hits = self._misses = self._evictions = self._expirations = 0

    async def get_many(self, ids: Iterable[str]) -> dict[str, float]:
        now = self._clock()
        found: dict[str, float] = {}
        for id_ in ids:
            entry = self._entries.get(id_)
            if entry is not None and entry[0] <= now:
                del self._entries[id_]
                self._expirations += 1
                entry = None
            if entry is None:
                self._misses += 1
                continue
            self._entries.move_to_end(id_)
            self._hits += 1
            found[id_] = entry[1]
        return found

    async def put_many(self, scores: Mapping[str, float]) -> None:
        """Evicts least recently used entries beyond the bound."""
        expires = self._clock() + self.ttl_seconds
        for id_, score in scores.items():
            self._entries[id_] = (expires, score)
            self._entries.move_to_end(id_)
        now = self._clock()
        while len(self._entries) > self.max_entries:
            _, (entry_expires, _) = self._entries.popitem(last=False)
            if entry_expires <= now:
                self._expirations += 1
            else:
                self._evictions += 1

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def stats(self) -> RerankCacheStats:
        return RerankCacheStats(self._hits, self._misses, self._evictions, self._expirations, len(self._entries))
