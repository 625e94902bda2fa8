"""A loopback OpenAI-compatible `/v1/embeddings` server serving a second, deterministic embedding model.

The model ("hashed-words-64") hashes each word into 64 signed dimensions and adds one large shared
component, like real anisotropic models whose cosines all sit high: related texts score about 0.9 and
unrelated ones about 0.75, so its raw cosines are not comparable with MiniLM's (a right MiniLM match is
often 0.5-0.7). Tests use it to build composites whose children use different models.
"""

from __future__ import annotations

import functools
import hashlib
import re

import numpy as np
from aiohttp import web

from server.testing.anthropic_standin import LoopbackServer

MODEL = "hashed-words-64"
DIM = 64
SHARED = 2.2  # weight of the component every text shares (relative to one word's unit vector)
WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=1 << 16)
def word_vector(word: str) -> np.ndarray:
    """The word's fixed random direction (read-only: kept for the word's next use, since seeding a generator
    per word costs more than the rest of embedding a text)."""
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).normal(size=DIM)
    vector.flags.writeable = False
    return vector


SHARED_DIRECTION = word_vector("\x00shared") / np.linalg.norm(word_vector("\x00shared"))


def embed_text(text: str) -> list[float]:
    words = WORD.findall(text.lower())
    bag = np.zeros(DIM)
    for word in words:
        bag += word_vector(word)
    if words:
        bag /= np.linalg.norm(bag) or 1.0
    return (bag + SHARED * SHARED_DIRECTION).round(6).tolist()


class EmbeddingStandin(LoopbackServer):
    """`POST /v1/embeddings` ({"model", "input": [...]}) -> {"data": [{"embedding", "index"}], "model"}."""

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/v1"

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/embeddings", self._embeddings)]

    async def _embeddings(self, request: web.Request) -> web.Response:
        recorded = await self.record(request)
        body = recorded.body if isinstance(recorded.body, dict) else {}
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return web.json_response({"error": {"message": "input must be a string or a list of strings"}}, status=400)
        data = [{"object": "embedding", "index": i, "embedding": embed_text(t)} for i, t in enumerate(texts)]
        return web.json_response({"object": "list", "data": data, "model": body.get("model", MODEL)})
