"""Several stores searched with one question vector, in-memory ones as one stacked view.

A composite owns one `GroupSearch`. Its view of the children is keyed by the identity of each store's
current pack, read again on every search: a child that changed (reloaded, upserted, deleted) has a new
pack, so the next search builds a new view from the packs as they are now (never a stale view), and a
view is only used once fully built (never a half-built one). On a reload the runtime builds new
stores and a new composite, whose `start` builds the view off the request path (`warm`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from ..bulkhead import SEARCH_POOL, run_on
from ..coalescing import Coalescer
from .base import StoreHit, TemplateStore
from .memory import MemoryTemplateStore
from .packed import Packed
from .placement import searches_off_loop
from .stacked import INT8_ABOVE_FLOATS, StackedView, build_view

Result = list[StoreHit] | Exception
_Request = tuple[str, Sequence[TemplateStore], np.ndarray, int]  # group, its stores, a question's vector, k
T = TypeVar("T")


class GroupSearch:
    def __init__(self, int8_above_floats: int = INT8_ABOVE_FLOATS, off_loop_above_floats: int | None = None) -> None:
        self.int8_above_floats = int8_above_floats
        self.off_loop_above_floats = off_loop_above_floats  # None: stores/placement.py's default
        self._views: dict[str, StackedView] = {}  # by group: one per embedding model among the children
        # the request path's searches: those of one loop turn (one encoder batch of questions) share a call
        self.requests: Coalescer[_Request, list[Result]] = Coalescer("stacked-search", self._search_requests)

    async def search_request(
        self, group: str, stores: Sequence[TemplateStore], vector: np.ndarray, k: int
    ) -> list[Result]:
        """`search` for a request: concurrent requests' questions searched in one `search_many` (the same
        scores as one by one; its fixed numpy cost paid once per batch, not per question)."""
        return await self.requests.submit((group, stores, vector, k))

    async def _search_requests(self, items: list[_Request]) -> list[list[Result]]:
        """The batch in place when it is cheap, else on the search pool: the event loop only dispatches."""
        stores = {id(s): s for _, group, _, _ in items for s in group}.values()
        built = all(self._built(group, members) for group, members, _, _ in items)
        if searches_off_loop(stores, len(items), self.off_loop_above_floats, built):
            return await run_on(SEARCH_POOL, self._search_batch, items)
        return self._search_batch(items)

    def _search_batch(self, items: list[_Request]) -> list[list[Result]]:
        out: list[list[Result]] = [[] for _ in items]
        alike: dict[tuple[str, tuple[int, ...], int], list[int]] = {}
        for i, (group, stores, _, k) in enumerate(items):
            alike.setdefault((group, tuple(map(id, stores)), k), []).append(i)
        for (group, _, k), members in alike.items():
            stores = items[members[0]][1]
            if len(members) == 1:
                out[members[0]] = self.search(group, stores, items[members[0]][2], k)
                continue
            vectors = [items[i][2] for i in members]
            if len({np.shape(v) for v in vectors}) != 1:  # a refused vector: each gets what `search` gives it
                found = [self.search(group, stores, v, k) for v in vectors]
            else:
                found = self.search_many(group, stores, np.stack(vectors), k)
            for i, results in zip(members, found, strict=True):
                out[i] = results
        return out

    def search(self, group: str, stores: Sequence[TemplateStore], vector: np.ndarray, k: int) -> list[Result]:
        """Each store's k best templates (or the error its own search would raise), in order. `group`
        names the stores searched with this vector (the embedding model's id)."""
        results: list[Result] = [[] for _ in stores]
        stacked: list[tuple[int, TemplateStore, Packed]] = []
        for i, store in enumerate(stores):
            packed = store.packed() if isinstance(store, MemoryTemplateStore) else None
            if packed is not None and k > 0 and np.shape(vector) == (packed.dim,):
                stacked.append((i, store, packed))
            else:  # another kind of store, an empty one, or one that refuses this vector: on its own
                results[i] = _guarded(store.search, vector, k)
        if len(stacked) == 1:  # one store: its own view, already built
            i, store, _ = stacked[0]
            results[i] = _guarded(store.search, vector, k)
        elif stacked:
            found = _guarded(self._view_of(group, [p for _, _, p in stacked]).search, vector, k)
            for j, (i, _, _) in enumerate(stacked):
                results[i] = found if isinstance(found, Exception) else found[j]
        return results

    def search_many(
        self, group: str, stores: Sequence[TemplateStore], vectors: np.ndarray, k: int
    ) -> list[list[Result]]:
        """`search` for each row of `vectors`, one list per question (fit-thresholds): the stacked view
        searches them all in one call (StackedView.search_many)."""
        rows = list(vectors)
        stacked = [
            (i, p)
            for i, store in enumerate(stores)
            if isinstance(store, MemoryTemplateStore) and (p := store.packed()) is not None and k > 0
        ]
        if len(stacked) < 2 or len({p.dim for _, p in stacked}) != 1 or np.shape(vectors)[1:] != (stacked[0][1].dim,):
            return [self.search(group, stores, v, k) for v in rows]
        try:
            found = self._view_of(group, [p for _, p in stacked]).search_many(np.asarray(vectors), k)
        except Exception:  # e.g. one question's vector refused: each question gets what `search` gives it
            return [self.search(group, stores, v, k) for v in rows]
        inside = {i for i, _ in stacked}
        out: list[list[Result]] = []
        for n, vector in enumerate(rows):
            results: list[Result] = [[] for _ in stores]
            for j, (i, _) in enumerate(stacked):
                results[i] = found[n][j]
            for i, store in enumerate(stores):
                if i not in inside:  # another kind of store: on its own, as `search` does
                    results[i] = _guarded(store.search, vector, k)
            out.append(results)
        return out

    def warm(self, group: str, stores: Sequence[TemplateStore]) -> None:
        """Build the view of these stores now (a composite's start), not on its first question."""
        packs = [p for s in stores if isinstance(s, MemoryTemplateStore) and (p := s.packed()) is not None]
        if len(packs) > 1 and len({p.dim for p in packs}) == 1:
            self._view_of(group, packs)

    def leaves_loop(self, group: str, stores: Sequence[TemplateStore], questions: int) -> bool:
        """Whether searching these stores for `questions` questions at once goes to the search pool
        (stores/placement.py): it costs more than a hop to a thread, or its view must be built first."""
        return searches_off_loop(stores, questions, self.off_loop_above_floats, self._built(group, stores))

    def _built(self, group: str, stores: Sequence[TemplateStore]) -> bool:
        """Whether searching these stores reads only what is built: every in-memory store packed, and this
        group's view made of those packs when more than one is stacked (`search` stacks them)."""
        memory = [s for s in stores if isinstance(s, MemoryTemplateStore)]
        packs = [s.current_pack() for s in memory]
        if any(p is None and s.search_floats() for p, s in zip(packs, memory, strict=True)):
            return False
        live = [p for p in packs if p is not None]
        if len(live) == 1:
            return next(s for s in memory if s.current_pack() is live[0]).ready
        view = self._views.get(group)
        return len(live) == 0 or (view is not None and view.packs == tuple(live))

    def view(self, group: str) -> StackedView | None:
        """The group's stacked view in place (None before one is built); never builds one."""
        return self._views.get(group)

    def _view_of(self, group: str, packs: list[Packed]) -> StackedView:
        view = self._views.get(group)
        if view is not None and view.packs == tuple(packs):  # Packed compares by identity
            return view
        view = build_view(packs, self.int8_above_floats)
        self._views[group] = view  # swapped in whole, once built
        return view


def _guarded(search: Callable[[np.ndarray, int], T], vector: np.ndarray, k: int) -> T | Exception:
    try:
        return search(vector, k)
    except Exception as exc:
        return exc
