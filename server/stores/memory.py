"""Exact in-memory store: the k best templates by cosine (a template's score is its best vector's).

The templates are packed into one float32 matrix (packed.py) and searched through a view of that one
pack (stacked.py): float32 BLAS for small stores, an int8 first pass with exactly rescored survivors
for large ones, every step one vectorised pass over all vectors, so the cost does not grow with the
number of examples per template. A composite searches its children's packs stacked in one view
(group_search.py). A search never misses a template, which an approximate index with a fixed fetch
size can (the peer offered one to three templates per child).
"""

from __future__ import annotations

import threading

import numpy as np

from .base import StoreHit, TemplateStore
from .packed import Packed, pack
from .stacked import INT8_ABOVE_FLOATS, StackedView, build_view

__all__ = ["INT8_ABOVE_FLOATS", "MemoryTemplateStore"]


class MemoryTemplateStore(TemplateStore):
    blocking = False

    def __init__(
        self, collection_name: str, dim: int | None = None, int8_above_floats: int = INT8_ABOVE_FLOATS
    ) -> None:
        self.collection_name = collection_name
        self._dim = dim
        self.int8_above_floats = int8_above_floats  # tests move it to exercise both paths
        self._lock = threading.Lock()
        self._templates: dict[str, tuple[str, list[str], np.ndarray]] = {}
        self._packed: Packed | None = None  # the templates packed; None after any change
        self._view: StackedView | None = None  # this store's pack alone; None after any change
        self._vectors = 0  # over all templates: what a search reads (search_floats)

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
            old = self._templates.get(template_id)
            self._vectors += len(vectors) - (len(old[2]) if old is not None else 0)
            self._templates[template_id] = (content_hash, list(texts), vectors)
            self._packed = self._view = None

    def restore(self, entries: list[tuple[str, str, list[str]]], matrix: np.ndarray, dim: int) -> None:
        """Fill an empty store with its pack as written before (snapshot.py): (template id, content hash,
        texts) in pack order, and their vectors as the rows of `matrix`; the same checks as `upsert`."""
        sizes = [len(texts) for _, _, texts in entries]
        if matrix.dtype != np.float32 or matrix.shape != (sum(sizes), dim) or not all(sizes):
            raise ValueError(f"a matrix of {matrix.shape} does not hold these templates' vectors of dimension {dim}")
        if len({tid for tid, _, _ in entries}) != len(entries):
            raise ValueError("a template id is there twice")
        if not np.isfinite(matrix).all():
            raise ValueError("non-finite vector values")
        bounds = np.concatenate(([0], np.cumsum(sizes)))
        matrix = np.ascontiguousarray(matrix)
        matrix.setflags(write=False)
        packed = Packed([tid for tid, _, _ in entries], [t for _, _, texts in entries for t in texts], bounds, matrix)
        with self._lock:
            if self._templates:
                raise ValueError("restore fills an empty store only")
            self._dim = dim
            self._templates = {tid: (digest, texts, matrix[:0]) for tid, digest, texts in entries}
            self._vectors = int(bounds[-1])
            self._packed, self._view = packed, None
            self._share_rows(packed)

    def delete(self, template_ids: list[str]) -> None:
        with self._lock:
            for tid in template_ids:
                old = self._templates.pop(tid, None)
                self._vectors -= len(old[2]) if old is not None else 0
            self._packed = self._view = None

    def vectors_of(self, template_id: str) -> np.ndarray:
        with self._lock:
            return self._templates[template_id][2]

    def search_floats(self) -> int:
        """Vectors x dimension: what one search reads (stores/placement.py decides from it where a search runs)."""
        return self._vectors * (self._dim or 0)

    @property
    def ready(self) -> bool:
        """True when the store's own view is built (a search of it alone does not pack first)."""
        return self._view is not None or not self._templates

    @property
    def uses_int8_pass(self) -> bool:
        view = self.view()
        return view is not None and view.int8 is not None

    def packed(self) -> Packed | None:
        """The templates as they are now, packed (None when empty): what a stacked view reads. Packing
        alone does not build this store's own view (its int8 pass): a composite's child is searched through
        the composite's stacked view, and its own view is built only if it is searched alone."""
        packed = self._packed
        if packed is not None:
            return packed
        with self._lock:
            return self._pack_locked()

    def view(self) -> StackedView | None:
        """This store alone, packed and ready to search (built on first use after a change)."""
        view = self._view
        if view is not None:
            return view
        with self._lock:
            packed = self._pack_locked()
            if self._view is None and packed is not None:
                self._view = build_view([packed], self.int8_above_floats)
            return self._view

    def _pack_locked(self) -> Packed | None:
        if self._packed is None and self._templates:
            entries = [(tid, entry[1], entry[2]) for tid, entry in self._templates.items()]
            self._packed = pack(entries)
            self._share_rows(self._packed)
        return self._packed

    def current_pack(self) -> Packed | None:
        """The pack if it is built (None when not, or when the store is empty): never packs."""
        return self._packed

    def _share_rows(self, packed: Packed) -> None:
        """Each template's vectors become rows of the packed matrix (read-only views), so the store keeps one
        copy of every vector, not two: the arrays it was given (slices of an encoder batch) are freed."""
        for tid, start, end in zip(packed.ids, packed.bounds[:-1].tolist(), packed.bounds[1:].tolist(), strict=True):
            content_hash, texts, _ = self._templates[tid]
            self._templates[tid] = (content_hash, texts, packed.matrix[start:end])

    def search(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        view = self.view()
        if view is None or k <= 0:
            return []
        return view.search(vector, k)[0]
