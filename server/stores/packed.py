"""One in-memory store's templates packed for search: every vector in one float32 matrix, templates
contiguous in insertion order. Immutable: a change to the store packs anew, so a search (or a stacked
view of several stores) holding a `Packed` never sees half of a change."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .bounded_scores import Quantised, quantise


@dataclass(frozen=True, eq=False)
class Packed:
    ids: list[str]
    texts: list[str]  # per vector, insertion order
    bounds: np.ndarray  # first vector of each template, plus the total
    matrix: np.ndarray  # float32 (vectors, dim)
    # codes made ahead (read from the store's file, or made while writing it): taken by the next `quantised`
    _ahead: list[Quantised] = field(default_factory=list, compare=False, repr=False)
    # reads this pack's codes back from the store's file (None: the file holds another pack now)
    _on_disk: list[Callable[[], Quantised | None]] = field(default_factory=list, compare=False, repr=False)

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.bounds)

    def quantised(self) -> Quantised:
        """The int8 codes and error terms, made for each view that stacks this pack and dropped once the view's
        int8 pass holds them (kept per pack they cost 0.4 KB per example; quantising is ~2 ms per 1,000
        vectors, paid again only when a view is rebuilt). Codes handed over ahead (`hand_over`) are taken instead,
        once, and then codes the store's file holds (`kept_on_disk`)."""
        try:
            return self._ahead.pop()  # atomic: two views built at once take it once
        except IndexError:
            pass
        codes = self._on_disk[0]() if self._on_disk else None
        return codes if codes is not None else quantise(self.matrix, self.bounds)

    def hand_over(self, codes: Quantised) -> None:
        """Codes of exactly this matrix, for the next view built (then dropped, as those `quantised` makes)."""
        self._ahead[:] = [codes]

    def kept_on_disk(self, read: Callable[[], Quantised | None]) -> None:
        """`read` gives this matrix's codes from the store's file: a view rebuilt later (an edit of another
        store) reads them (~1.2 ms of CPU per 1,000 vectors) instead of quantising again (~9 ms)."""
        self._on_disk[:] = [read]


def pack(entries: list[tuple[str, list[str], np.ndarray]]) -> Packed:
    """(template id, texts, float32 vectors) in insertion order."""
    blocks = [vectors for _, _, vectors in entries]
    bounds = np.concatenate(([0], np.cumsum([b.shape[0] for b in blocks])))
    texts = [text for _, texts, _ in entries for text in texts]
    matrix = np.vstack(blocks)
    matrix.setflags(write=False)  # shared: the store's per-template vectors are views of it
    return Packed([tid for tid, _, _ in entries], texts, bounds, matrix)
