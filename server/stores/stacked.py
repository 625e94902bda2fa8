"""Exact search of one or more packed stores as one: the k best templates of each store in one pass.

A composite asks the same question of every child. Searched one by one, ten children cost ten
products and ten selections of fixed numpy overhead each, which dominated small and medium stores
(issue 17). A view stacks the children's packs: one product (or one int8 first pass) over every
vector, one segment max per template, then each store's k best templates, all vectorised; only the
per-store k-th best is found in a loop over stores (one `np.partition` each).

Small views score every vector with float32 BLAS, in row blocks cut per pack (the same products, so the
same scores, as a store searched alone). Large views (more than `INT8_ABOVE_FLOATS` floats) are not read in
full: an int8 first pass bounds every vector's score, a segment max over each template's vectors
bounds its best score, and only the vectors that can still be the best of one of a store's k best
templates are scored exactly, correctly rounded to float32 (bounded_scores.py). Either way the search
never misses a template; ties go to the template inserted first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .base import StoreHit
from .bounded_scores import EXACT_FLOATS, Int8Pass, Query, build_int8_pass, query_of, rounded_dots
from .packed import Packed

# Views of more floats (vectors x dimension) than this take the int8 first pass. Measured crossover
# (one-thread CPU time per search, real MiniLM vectors, stacked views of 1 to 10 children): float32
# blocks win up to about 3,000 vectors of dimension 384, the int8 pass from about 4,500 (at 15,150:
# 2.0 ms against 3.4 ms).
INT8_ABOVE_FLOATS = 4000 * 384
# float32 products go by blocks of rows that OpenBLAS runs on one thread (it splits a gemv over threads
# from 460,800 floats, and a split product stalls for milliseconds whenever another process holds a core)
BLOCK_ROWS = 1024
_UNDERFLOW = 2.0**-139  # an exact score below 2^-126 rounds to float32 within 2^-150
# per-pack k-th values come from one sort of the view when its packs hold fewer templates than this on
# average, else from a partition per pack (5 packs of 200: 10 us against 60 us for the sort; 50 of 20: even)
_SORT_BELOW_PER_PACK = 32
_REFINE_ABOVE = 256  # int8 survivors above which a float32 pass prunes them again before exact scoring
# questions whose int8 first pass runs as one product (their int32 scores: 80 KB each at 20,000 vectors)
INT8_MANY_ROWS = 64
# int8 products of the last questions kept (by their codes) for whoever asks next: the intent model reads the
# pass the search just ran for the same questions (intent/first_pass.py), a few milliseconds later
RECENT_PRODUCTS = 16


class RecentProducts:
    """The int8 pass's products of the last questions, by the questions' codes (all a product depends on)."""

    def __init__(self, keep: int = RECENT_PRODUCTS) -> None:
        self.keep = keep
        self._rows: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # the search's and the scoring's threads

    def get(self, key: bytes) -> np.ndarray | None:
        with self._lock:
            return self._rows.get(key)

    def put(self, key: bytes, row: np.ndarray) -> None:
        with self._lock:
            self._rows[key] = row
            self._rows.move_to_end(key)
            while len(self._rows) > self.keep:
                self._rows.popitem(last=False)


@dataclass(frozen=True, eq=False)
class StackedView:
    packs: tuple[Packed, ...]
    template_starts: np.ndarray  # first template of each pack, plus the total
    vector_starts: np.ndarray  # first vector of each pack, plus the total
    starts: np.ndarray  # first vector of each template, over all packs
    sizes: np.ndarray  # vectors per template
    int8: Int8Pass | None
    blocks: list[np.ndarray]  # float32 path: each pack's matrix in row blocks of BLOCK_ROWS
    recent: RecentProducts = field(default_factory=RecentProducts)

    @property
    def dim(self) -> int:
        return self.packs[0].dim

    def products(self, queries: Sequence[Query]) -> list[np.ndarray]:
        """The int8 pass's integer products of these (non-zero) questions with every vector: those of recent
        questions as they were, the others in one run (Int8Pass.dots)."""
        assert self.int8 is not None
        keys = [query.int8()[0].tobytes() for query in queries]
        found = {i: row for i, key in enumerate(keys) if (row := self.recent.get(key)) is not None}
        missing = [i for i in range(len(keys)) if i not in found]
        if missing:
            for i, row in zip(missing, self.int8.dots([queries[i] for i in missing]), strict=True):
                found[i] = row
                self.recent.put(keys[i], row.copy())  # a row of its own: a kept row never holds a whole batch
        return [found[i] for i in range(len(keys))]

    def search(self, vector: np.ndarray, k: int) -> list[list[StoreHit]]:
        """Each pack's k best templates, best first (ties: insertion order), with the first text at
        the template's best score."""
        if k <= 0:
            return [[] for _ in self.packs]
        if np.shape(vector) != (self.dim,):
            raise ValueError(f"query shape {np.shape(vector)} does not match the store's dimension {self.dim}")
        if self.int8 is None:
            q = np.asarray(vector, dtype=np.float32)
            if not np.isfinite(q).all():
                raise ValueError("query vector has non-finite values")
            return self._float32(q, k)
        query = query_of(vector)
        if query.norm == 0:
            return self._zero(k)
        return self._int8(query, k)

    def _zero(self, k: int) -> list[list[StoreHit]]:
        """A zero question: every score is exactly 0, insertion order decides."""
        return [
            [StoreHit(p.ids[t], 0.0, p.texts[int(p.bounds[t])]) for t in range(min(k, len(p.ids)))] for p in self.packs
        ]

    def search_many(self, vectors: np.ndarray, k: int) -> list[list[list[StoreHit]]]:
        """`search` for each row of `vectors` (concurrent requests' questions; fit-thresholds routes
        thousands): the same products, one per question, so the same scores. Small views select over all
        the questions at once instead of paying the selection's fixed numpy overhead per question; large
        (int8) views run the first pass for the questions in one product (INT8_MANY_ROWS at a time), then
        bound and score each question as `search` does. Rows `search` would refuse go through it one by one."""
        q = np.asarray(vectors, dtype=np.float32)
        if k <= 0 or q.ndim != 2 or q.shape[1] != self.dim or not np.isfinite(q).all():
            return [self.search(v, k) for v in vectors]
        if self.int8 is None:
            return self._float32_many(q, k)
        queries = [query_of(v) for v in q]
        out: list[list[list[StoreHit]]] = []
        for lo in range(0, len(queries), INT8_MANY_ROWS):
            part = queries[lo : lo + INT8_MANY_ROWS]
            live = [query for query in part if query.norm != 0]
            dots = iter(self.products(live)) if live else iter(())
            out += [self._int8(query, k, next(dots)) if query.norm != 0 else self._zero(k) for query in part]
        return out

    def _float32_many(self, qs: np.ndarray, k: int) -> list[list[list[StoreHit]]]:
        total = int(self.vector_starts[-1])
        scores = np.empty((len(qs), total), np.float32)
        edges = np.cumsum([0, *(len(b) for b in self.blocks)])
        for i, q in enumerate(qs):
            for block, lo, hi in zip(self.blocks, edges[:-1], edges[1:], strict=True):
                scores[i, lo:hi] = block @ q
        best = np.maximum.reduceat(scores, self.starts, axis=1)  # (questions, templates)
        # each template's first vector at its best score: the smallest index among those that reach it
        at_best = np.where(scores == np.repeat(best, self.sizes, axis=1), np.arange(total), total)
        first = np.minimum.reduceat(at_best, self.starts, axis=1)
        out: list[list[list[StoreHit]]] = [[] for _ in qs]
        ts, vs = self.template_starts, self.vector_starts
        for p, pack in enumerate(self.packs):
            values = best[:, ts[p] : ts[p + 1]]
            # score descending, then insertion order (a stable sort keeps ties in template order)
            order = np.argsort(-values, axis=1, kind="stable")[:, :k]
            top = np.take_along_axis(values, order, axis=1).tolist()
            rows = (np.take_along_axis(first[:, ts[p] : ts[p + 1]], order, axis=1) - vs[p]).tolist()
            ids, texts = pack.ids, pack.texts
            for i, (ts_i, ss_i, rs_i) in enumerate(zip(order.tolist(), top, rows, strict=True)):
                out[i].append(
                    [StoreHit(ids[t], score + 0.0, texts[row]) for t, score, row in zip(ts_i, ss_i, rs_i, strict=True)]
                )
        return out

    def _float32(self, q: np.ndarray, k: int) -> list[list[StoreHit]]:
        blocks = self.blocks
        scores = blocks[0] @ q if len(blocks) == 1 else np.concatenate([b @ q for b in blocks])
        best = np.maximum.reduceat(scores, self.starts)
        kth = self._kth_per_pack(best, k)
        templates = np.flatnonzero(best >= np.repeat(kth, np.diff(self.template_starts)))
        at_best = np.flatnonzero(scores == np.repeat(best, self.sizes))
        rows = at_best[np.searchsorted(at_best, self.starts[templates])]  # each template's first best vector
        return self._hits(templates, best[templates], rows, k)

    def _int8(self, query: Query, k: int, dots: np.ndarray | None = None) -> list[list[StoreHit]]:
        """`dots`: the question's first-pass products when a batch computed them (Int8Pass.dots)."""
        assert self.int8 is not None
        approx, bound = self.int8.bounds(query, self.products([query])[0] if dots is None else dots)
        lower = np.maximum.reduceat(approx - bound, self.starts)
        kth = self._kth_per_pack(lower, k)
        # A template among its pack's k best scores at least the pack's k-th best lower bound, and its best
        # vector at least the template's own lower bound (the bounds enclose the rounded score too, so a
        # vector below it cannot even tie): every vector that can be the best of one of the k best
        # templates has an upper bound that reaches both, a proven superset.
        floor = np.maximum(np.repeat(kth, np.diff(self.template_starts)), lower)
        reach = np.repeat(floor, self.sizes) - _UNDERFLOW
        rows = np.flatnonzero(approx + bound >= reach)
        if len(rows) > _REFINE_ABOVE:
            rows = self._refine(rows, query, k)
        scores = self._exact(rows, query)
        owners = self._owner(rows)
        order = np.lexsort((rows, -scores, owners))  # by template, best first, then first text
        grouped = owners[order]
        firsts = order[np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])]
        return self._hits(owners[firsts], scores[firsts], rows[firsts], k)

    def _refine(self, rows: np.ndarray, query: Query, k: int) -> np.ndarray:
        """A second, tighter pass over the int8 pass's survivors (a tenth of the vectors when templates
        are alike): float32 products of the gathered rows, each within a proven bound of the rounded
        exact score, prune again the same way, so the exact float64 scoring reads only the few rows near
        each store's k-th best (at 150 x 100 alike examples: from about 1,800 rows to a handful)."""
        dots = self._gathered(rows, query.q32)
        # A float32 dot product of n terms, summed in any order, is within gamma_n sum|q_i x_i| <= gamma_n
        # ||q|| ||x|| of the exact value; the exact score's own rounding to float32 adds 2^-24 |q.x|. Four
        # extra terms cover both roundings with room.
        n = self.dim + 4
        gamma = n * 2.0**-24 / (1 - n * 2.0**-24)
        spread = (gamma * query.norm * (1 + 2.0**-20)) * self.int8.l2[rows] + _UNDERFLOW  # type: ignore[union-attr]
        low, high = dots - spread, dots + spread
        owners = self._owner(rows)
        firsts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])  # rows ascend: owners do too
        lower = np.full(len(self.starts), -np.inf)
        lower[owners[firsts]] = np.maximum.reduceat(low, firsts)
        kth = self._kth_per_pack(lower, k)
        floor = np.maximum(np.repeat(kth, np.diff(self.template_starts)), lower)  # as in `_int8`
        return rows[high >= floor[owners] - _UNDERFLOW]

    def _gathered(self, rows: np.ndarray, q32: np.ndarray) -> np.ndarray:
        """float64 copies of the float32 products of these rows (ascending) with q32, pack by pack."""
        cut = np.searchsorted(rows, self.vector_starts)
        parts = [
            pack.matrix[rows[cut[p] : cut[p + 1]] - self.vector_starts[p]] @ q32
            for p, pack in enumerate(self.packs)
            if cut[p + 1] > cut[p]
        ]
        return (np.concatenate(parts) if len(parts) != 1 else parts[0]).astype(np.float64)

    def _owner(self, rows: np.ndarray) -> np.ndarray:
        """The template of each vector (global indices)."""
        return np.searchsorted(self.starts, rows, side="right") - 1

    def _exact(self, rows: np.ndarray, query: Query) -> np.ndarray:
        """Correctly rounded float32 scores of these vectors (ascending indices), read from their packs: each
        pack's rows gathered and multiplied in one step (numpy widens them to float64 for the gemv)."""
        assert self.int8 is not None
        cut = np.searchsorted(rows, self.vector_starts)
        step = max(1, EXACT_FLOATS // self.dim)
        parts = [
            pack.matrix[rows[lo : min(lo + step, cut[p + 1])] - self.vector_starts[p]] @ query.q64
            for p, pack in enumerate(self.packs)
            for lo in range(int(cut[p]), int(cut[p + 1]), step)
        ]
        dots = np.concatenate(parts) if len(parts) != 1 else parts[0]
        return rounded_dots(dots, self.int8.l2[rows], query, lambda i: self._vector(int(rows[i])))

    def _vector(self, row: int) -> np.ndarray:
        """One vector by its index over all packs."""
        p = int(np.searchsorted(self.vector_starts, row, side="right")) - 1
        return self.packs[p].matrix[row - int(self.vector_starts[p])]

    def _kth_per_pack(self, values: np.ndarray, k: int) -> np.ndarray:
        """Per pack, the k-th largest of its templates' values (-inf when it has k templates or fewer)."""
        kth = np.full(len(self.packs), -np.inf)
        ts = self.template_starts
        counts = np.diff(ts)
        if len(values) < _SORT_BELOW_PER_PACK * len(self.packs):  # many small packs: one sort by pack, then value
            order = np.lexsort((-values, np.repeat(np.arange(len(self.packs)), counts)))
            some = counts > k
            kth[some] = values[order[ts[:-1][some] + k - 1]]
            return kth
        for p in range(len(self.packs)):
            n = int(ts[p + 1] - ts[p])
            if k < n:
                kth[p] = np.partition(values[ts[p] : ts[p + 1]], n - k)[n - k]
        return kth

    def _hits(self, templates: np.ndarray, best: np.ndarray, rows: np.ndarray, k: int) -> list[list[StoreHit]]:
        """Per pack, the k best of these candidate templates (global indices, each with its best score
        and the vector that has it): score descending, then insertion order."""
        pack_of = np.searchsorted(self.template_starts, templates, side="right") - 1
        order = np.lexsort((templates, -best, pack_of))
        grouped = pack_of[order]
        rank = np.arange(len(order)) - np.searchsorted(grouped, grouped)
        out: list[list[StoreHit]] = [[] for _ in self.packs]
        keep = order[rank < k]
        ts, vs = self.template_starts, self.vector_starts
        for p, t, score, row in zip(
            pack_of[keep].tolist(), templates[keep].tolist(), best[keep].tolist(), rows[keep].tolist(), strict=True
        ):
            pack = self.packs[p]
            out[p].append(StoreHit(pack.ids[t - ts[p]], score + 0.0, pack.texts[row - vs[p]]))
        return out


def build_view(packs: Sequence[Packed], int8_above_floats: int = INT8_ABOVE_FLOATS) -> StackedView:
    """A view of these packs (at least one, all of one dimension), in this order."""
    if not packs or len({p.dim for p in packs}) != 1:
        raise ValueError("a stacked view needs packs of one dimension")
    template_starts = np.concatenate(([0], np.cumsum([len(p.ids) for p in packs])))
    vector_starts = np.concatenate(([0], np.cumsum([p.matrix.shape[0] for p in packs])))
    starts = np.concatenate([p.bounds[:-1] + offset for p, offset in zip(packs, vector_starts, strict=False)])
    sizes = np.concatenate([p.sizes for p in packs])
    int8 = None
    if int(vector_starts[-1]) * packs[0].dim > int8_above_floats:
        int8 = build_int8_pass([p.quantised() for p in packs])
    blocks = (
        []
        if int8 is not None
        else [m[i : i + BLOCK_ROWS] for m in (p.matrix for p in packs) for i in range(0, len(m), BLOCK_ROWS)]
    )
    return StackedView(tuple(packs), template_starts, vector_starts, starts, sizes, int8, blocks)
