"""Embedded persistent ChromaDB store: survives restarts, so only changed templates are re-embedded.

Created and opened with `embedding_function=None`: we always pass vectors, and Chroma's default
function would try to download a model, which cannot work offline.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np

from .base import StoreHit, TemplateStore

_clients: dict[str, object] = {}
_clients_lock = threading.Lock()


def _client(path: Path):
    import chromadb
    from chromadb.config import Settings

    key = str(path.resolve())
    with _clients_lock:
        if key not in _clients:
            path.mkdir(parents=True, exist_ok=True)
            _clients[key] = chromadb.PersistentClient(
                path=key, settings=Settings(anonymized_telemetry=False, allow_reset=False)
            )
        return _clients[key]


def collection_name_for(adapter: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", adapter)
    return f"{name}_intent_templates"[:63]


class ChromaTemplateStore(TemplateStore):
    def __init__(self, path: Path, adapter: str) -> None:
        self.collection_name = collection_name_for(adapter)
        self._collection = _client(path).get_or_create_collection(
            name=self.collection_name, embedding_function=None, metadata={"hnsw:space": "cosine"}
        )
        self._hashes: dict[str, str] | None = None
        self._lock = threading.Lock()

    def template_hashes(self) -> dict[str, str]:
        with self._lock:
            if self._hashes is None:
                got = self._collection.get(where={"part": 0}, include=["metadatas"])
                self._hashes = {m["template_id"]: m["hash"] for m in got["metadatas"] or []}
            return dict(self._hashes)

    def upsert(self, template_id: str, content_hash: str, texts: list[str], vectors: np.ndarray) -> None:
        self.delete([template_id])
        with self._lock:
            self._collection.add(
                ids=[f"{template_id}\x1f{i}" for i in range(len(texts))],
                embeddings=np.asarray(vectors, dtype=np.float32).tolist(),
                documents=texts,
                metadatas=[{"template_id": template_id, "hash": content_hash, "part": i} for i in range(len(texts))],
            )
            if self._hashes is not None:
                self._hashes[template_id] = content_hash

    def delete(self, template_ids: list[str]) -> None:
        if not template_ids:
            return
        with self._lock:
            self._collection.delete(where={"template_id": {"$in": list(template_ids)}})
            if self._hashes is not None:
                for tid in template_ids:
                    self._hashes.pop(tid, None)

    def search(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        total = self._collection.count()
        if total == 0 or k <= 0:
            return []
        fetch = min(total, max(4 * k, 16))
        query = [np.asarray(vector, dtype=np.float32).tolist()]
        while True:
            got = self._collection.query(
                query_embeddings=query, n_results=fetch, include=["metadatas", "distances", "documents"]
            )
            best: dict[str, StoreHit] = {}
            for meta, dist, doc in zip(got["metadatas"][0], got["distances"][0], got["documents"][0], strict=True):
                tid = meta["template_id"]
                if tid not in best:
                    best[tid] = StoreHit(tid, 1.0 - float(dist), doc or "")
            if len(best) >= k or fetch >= total:
                return sorted(best.values(), key=lambda h: -h.score)[:k]
            fetch = min(total, fetch * 4)
