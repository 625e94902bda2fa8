"""Large searches run on the search pool, not on the event loop thread (issue 34), with the same results;
small ones stay in place. Which thread ran a search is observed by recording the thread that enters the
stacked view's search (the real one, called through), never by timing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from server.stores import placement
from server.stores.group_search import GroupSearch
from server.stores.memory import MemoryTemplateStore
from server.stores.stacked import StackedView
from tests.unit.test_memory_store import FLOAT32, INT8_ALWAYS, as_tuples, fill
from tests.unit.test_stacked_search import children, questions


@pytest.fixture
def search_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The ident of every thread that entered StackedView.search / search_many."""
    seen: list[int] = []
    for name in ("search", "search_many"):
        real = getattr(StackedView, name)

        def recording(self, *args, _real=real, **kwargs):
            seen.append(threading.get_ident())
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(StackedView, name, recording)
    yield seen


@pytest.mark.parametrize("int8", [FLOAT32, INT8_ALWAYS])
async def test_large_group_search_runs_off_the_loop_with_the_same_results(int8, search_threads):
    rng = np.random.default_rng(7)
    stores_templates = children(rng, [30, 50, 20])
    stores = [fill(t, int8) for t in stores_templates]
    qs = questions(rng, stores_templates)
    expected = [GroupSearch(int8).search("m", stores, q, 3) for q in qs]
    search_threads.clear()
    group = GroupSearch(int8, off_loop_above_floats=0)  # every search counts as large
    got = await asyncio.gather(*(group.search_request("m", stores, q, 3) for q in qs))
    assert search_threads and threading.get_ident() not in search_threads
    for g, e in zip(got, expected, strict=True):
        assert [as_tuples(r) for r in g] == [as_tuples(r) for r in e]


async def test_small_group_search_stays_on_the_loop(search_threads):
    rng = np.random.default_rng(8)
    stores_templates = children(rng, [3, 4])
    stores = [fill(t, FLOAT32) for t in stores_templates]
    group = GroupSearch(FLOAT32)
    group.warm("m", stores)
    await group.search_request("m", stores, questions(rng, stores_templates)[0], 2)
    assert search_threads == [threading.get_ident()]


def test_a_store_that_must_pack_first_counts_as_large():
    store = MemoryTemplateStore("c")
    assert not placement.searches_off_loop([store])  # empty: nothing to pack
    store.upsert("t", "h", ["a"], np.ones((1, 4), np.float32))
    assert placement.searches_off_loop([store], limit=10**9)  # its view is not built yet
    store.search(np.ones(4, np.float32), 1)
    assert not placement.searches_off_loop([store], limit=10**9)
    assert placement.searches_off_loop([store], questions=3, limit=11)  # 1 vector x 4 floats x 3 questions
    assert store.search_floats() == 4
    store.upsert("t", "h2", ["a", "b"], np.ones((2, 4), np.float32))
    store.delete(["t"])
    assert store.search_floats() == 0


async def test_a_single_adapters_search_leaves_the_loop_when_large(tmp_path, monkeypatch, search_threads):
    """The router's path for an adapter searched on its own (no stacked group): past the limit its store
    is searched on the pool, with the same candidates."""
    from server.service.answer import explain_routing
    from server.testing.app import running_runtime
    from server.testing.configs import people_tree

    async with running_runtime(people_tree(tmp_path)) as runtime:
        adapter = runtime.get("people")
        await explain_routing(adapter, "who lives here")  # packs the store's view (on the pool: not built yet)
        search_threads.clear()
        before = (await explain_routing(adapter, "who lives in Paris")).body
        assert search_threads == [threading.get_ident()]  # a few vectors: in place
        search_threads.clear()
        monkeypatch.setattr(placement, "OFF_LOOP_ABOVE_FLOATS", 0)
        after = (await explain_routing(adapter, "who lives in Paris")).body
        assert search_threads and threading.get_ident() not in search_threads
        assert after["all_matches"] == before["all_matches"] and before["all_matches"]


async def test_string_similarity_over_many_texts_scores_off_the_loop(monkeypatch):
    """Candidates with many examples are scored on the pool (the same scores); a few stay in place."""
    from server.routing.candidates import Candidate
    from server.routing.settings import StringSimilaritySettings
    from server.routing.stages import string_similarity
    from server.templates import Template

    threads: list[int] = []
    real = string_similarity.StringSimilarityStage._scores

    def recording(self, *args):
        threads.append(threading.get_ident())
        return real(self, *args)

    monkeypatch.setattr(string_similarity.StringSimilarityStage, "_scores", recording)
    assert string_similarity.StringSimilarityStage.batches  # concurrent requests' questions go together
    stage = string_similarity.StringSimilarityStage(StringSimilaritySettings(min_threshold=0.0))

    def candidates(examples: int) -> list[Candidate]:
        return [
            Candidate(
                "a",
                Template(
                    id=f"t{i}",
                    description=f"orders of region {i}",
                    nl_examples=[f"how many orders in region {i} case {e}" for e in range(examples)],
                    body_key="sql",
                    body="SELECT 1",
                ),
                0.5,
            )
            for i in range(20)
        ]

    small, large = candidates(3), candidates(100)
    await stage.score("orders in region 7", small)
    assert threads == [threading.get_ident()]
    await stage.score("orders in region 7", large)
    assert len(threads) == 2 and threads[1] != threading.get_ident()
    expected = real(stage, "orders in region 7", [c.template for c in large])
    assert [c.stage_score("string_similarity") for c in large] == expected
    # eight concurrent requests of a few texts each: together past the limit, scored in one call off the loop
    threads.clear()
    batches = [candidates(8) for _ in range(8)]
    await asyncio.gather(*(stage.score_request(f"orders in region {i}", b) for i, b in enumerate(batches)))
    assert len(threads) == 8 and threading.get_ident() not in threads
    assert stage.coalescing is not None and stage.coalescing.calls == 1
