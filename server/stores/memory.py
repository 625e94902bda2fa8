"""Exact in-memory store: the k best templates by cosine (a template's score is its best vector's).

Small stores are scored as they always were: one float32 BLAS product over all vectors (on the
calling thread at these sizes), the best vector per template, ties to the template inserted first.
Large stores (10k templates: 46 MB of float32 per question) are not read in full: an int8 first pass
bounds every vector's score, a segment max over each template's vectors bounds its best score, and
only the few vectors that can still be the best of one of the k best templates are scored exactly
(bounded_scores.py). Every step is one vectorised pass over all vectors, so the cost does not grow
with the number of examples per template. A search never misses a template, which an approximate
index with a fixed fetch size can (the peer offered one to three templates per child).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .base import StoreHit, TemplateStore
from .bounded_scores import EXACT_FLOATS, Int8Pass, Query, build_int8_pass, exact_rows, query_of, row_norms

# Stores of more floats (vectors x dimension) than this take the int8 first pass (measured crossover:
# 900 vectors of dimension 384).
INT8_ABOVE_FLOATS = 900 * 384


@dataclass(frozen=True)
class _Packed:
    ids: list[str]
    texts: list[str]  # per vector, insertion order
    starts: np.ndarray  # first vector of each template
    bounds: list[int]  # starts plus the total, as Python ints
    matrix: np.ndarray  # float32 vectors, templates contiguous in insertion order
    rows: np.ndarray | None  # large stores: float32 [x, >= ||x||_2] per vector (matrix is a view of it)
    int8: Int8Pass | None

    def float32_top(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        """Every vector's float32 BLAS score; the k best templates, ties by insertion order."""
        scores = self.matrix @ vector
        best = np.maximum.reduceat(scores, self.starts)
        n = len(best)
        chosen = np.flatnonzero(best >= np.partition(best, n - k)[n - k]) if k < n else np.arange(n)
        if len(chosen) > 1:
            chosen = chosen[np.lexsort((chosen, -best[chosen]))][:k]
        bounds = self.bounds
        hits = []
        for t in chosen.tolist():
            row = bounds[t] + int(np.argmax(scores[bounds[t] : bounds[t + 1]]))
            hits.append(StoreHit(self.ids[t], float(best[t]), self.texts[row]))
        return hits

    def exact_top(self, rows: np.ndarray, query: Query, k: int) -> list[StoreHit]:
        """Score these vectors (ascending indices) exactly; each template's best of them, then the k
        best templates: score descending, then insertion order, each with its first text at its score."""
        assert self.int8 is not None and self.rows is not None
        extended, owner = self.rows, self.int8.owner
        step = max(1, EXACT_FLOATS // (self.matrix.shape[1] + 1))
        parts = [exact_rows(extended[rows[i : i + step]].astype(np.float64), query) for i in range(0, len(rows), step)]
        scores = np.concatenate(parts) if len(parts) > 1 else parts[0]
        owners = owner[rows]
        order = np.lexsort((rows, -scores, owners))  # by template, best first, then first text
        owners = owners[order]
        firsts = order[np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])]
        templates, best = owner[rows[firsts]], scores[firsts]
        ranked = firsts[np.lexsort((templates, -best))[:k]]
        return [
            StoreHit(self.ids[t], float(v) + 0.0, self.texts[r])
            for t, v, r in zip(
                owner[rows[ranked]].tolist(), scores[ranked].tolist(), rows[ranked].tolist(), strict=True
            )
        ]


class MemoryTemplateStore(TemplateStore):
    blocking = False

    def __init__(
        self, collection_name: str, dim: int | None = None, int8_above_floats: int = INT8_ABOVE_FLOATS
    ) -> None:
        self.collection_name = collection_name
        self._dim = dim
        self._int8_above_floats = int8_above_floats  # tests move it to exercise both paths
        self._lock = threading.Lock()
        self._templates: dict[str, tuple[str, list[str], np.ndarray]] = {}
        self._packed: _Packed | None = None

    def template_hashes(self) -> dict[str, str]:
        with self._lock:
            return {tid: entry[0] for tid, entry in self._templates.items()}

    def upsert(self, template_id: str, content_hash: str, texts: list[str], vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(texts) != vectors.shape[0] or not texts:
            raise ValueError("upsert needs one vector per text and at least one text")
        if not np.isfinite(vectors).all():
            raise ValueError(f"template '{template_id}' has non-finite vector values")
        with self._lock:
            if self._dim is None:
                self._dim = vectors.shape[1]
            elif vectors.shape[1] != self._dim:
                raise ValueError(f"vector dimension {vectors.shape[1]} does not match the store's {self._dim}")
            self._templates[template_id] = (content_hash, list(texts), vectors)
            self._packed = None

    def delete(self, template_ids: list[str]) -> None:
        with self._lock:
            for tid in template_ids:
                self._templates.pop(tid, None)
            self._packed = None

    def vectors_of(self, template_id: str) -> np.ndarray:
        with self._lock:
            return self._templates[template_id][2]

    @property
    def uses_int8_pass(self) -> bool:
        packed = self._pack()
        return packed is not None and packed.int8 is not None

    def _pack(self) -> _Packed | None:
        packed = self._packed
        if packed is not None:
            return packed
        with self._lock:
            if self._packed is None and self._templates:
                self._packed = _build(list(self._templates.items()), self._int8_above_floats)
            return self._packed

    def search(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        packed = self._pack()
        if packed is None or k <= 0:
            return []
        dim = packed.matrix.shape[1]
        if np.shape(vector) != (dim,):
            raise ValueError(f"query shape {np.shape(vector)} does not match the store's dimension {dim}")
        n = len(packed.ids)
        k = min(k, n)
        if packed.int8 is None:
            q = np.asarray(vector, dtype=np.float32)
            if not np.isfinite(q).all():
                raise ValueError("query vector has non-finite values")
            return packed.float32_top(q, k)
        query = query_of(vector)
        if query.norm == 0:  # every score is exactly 0: insertion order decides
            return [StoreHit(packed.ids[t], 0.0, packed.texts[packed.bounds[t]]) for t in range(k)]
        return packed.exact_top(packed.int8.candidates(query, k), query, k)


def _build(entries: list[tuple[str, tuple[str, list[str], np.ndarray]]], int8_above_floats: int) -> _Packed:
    ids = [tid for tid, _ in entries]
    texts = [text for _, entry in entries for text in entry[1]]
    blocks = [entry[2] for _, entry in entries]
    sizes = np.array([b.shape[0] for b in blocks])
    bounds = np.concatenate(([0], np.cumsum(sizes)))
    matrix = np.vstack(blocks)
    if matrix.size > int8_above_floats:
        int8 = build_int8_pass(matrix, bounds, sizes)
        if int8 is not None:
            dim = matrix.shape[1]
            rows = np.empty((len(matrix), dim + 1), dtype=np.float32)
            rows[:, :dim] = matrix
            norms = row_norms(matrix)
            rows[:, dim] = norms
            below = rows[:, dim] < norms  # rounded down to float32: take the next float32 up
            rows[below, dim] = np.nextafter(rows[below, dim], np.float32(np.inf))
            return _Packed(ids, texts, bounds[:-1], bounds.tolist(), rows[:, :dim], rows, int8)
    return _Packed(ids, texts, bounds[:-1], bounds.tolist(), matrix, None, None)
