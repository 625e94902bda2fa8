"""Questions asked concurrently share the encoder's forward passes, and get the vectors they would get
alone (the real MiniLM model; batching observed through the batcher's own counters)."""

from __future__ import annotations

import asyncio
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from server.embedding.base import EmbeddingError
from server.embedding.batching import QuestionBatcher
from server.embedding.cache import CachedEmbedder
from server.embedding.factory import shared_minilm
from server.embedding.minilm import QUERY_BATCH, MiniLMEmbedder, _chunks, pass_cost
from server.testing.polling import eventually

QUESTIONS = [
    f"{ask} {subject}?"
    for ask in ("how many", "show me the", "why is my", "list all")
    for subject in ("employees in Engineering", "refunds from last week", "card payment declined", "top customers")
] + ["what were total sales in 2024 grouped by country and by the product category of each order?"]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return MiniLMEmbedder(shared_minilm(tmp_path_factory.mktemp("models")))


def test_concurrent_questions_are_batched_and_equal_single_calls(embedder):
    async def scenario():
        alone = [await embedder.embed_query(q) for q in QUESTIONS]
        stats = embedder.model.questions.stats
        calls, questions = stats.calls, stats.questions
        together = await asyncio.gather(*(embedder.embed_query(q) for q in QUESTIONS))
        return alone, together, stats.calls - calls, stats.questions - questions, stats.largest

    alone, together, calls, questions, largest = asyncio.run(scenario())
    assert questions == len(QUESTIONS)
    assert calls < len(QUESTIONS) and largest > 1  # questions queued behind the first one shared passes
    assert largest <= QUERY_BATCH
    for a, b in zip(alone, together, strict=True):
        assert a.shape == b.shape == (384,) and a.dtype == b.dtype == np.float32
        # padding to the batch's longest question changes only the float summation order
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6)


def test_cached_embedder_routes_questions_through_the_batcher(embedder):
    cached = CachedEmbedder(embedder, None)

    async def scenario():
        before = embedder.model.questions.stats.questions
        vectors = await asyncio.gather(*(cached.embed_query(q + " (cached)") for q in QUESTIONS))
        again = await cached.embed_query(QUESTIONS[0] + " (cached)")  # the memory LRU answers
        return vectors, again, embedder.model.questions.stats.questions - before

    vectors, again, encoded = asyncio.run(scenario())
    assert encoded == len(QUESTIONS)
    assert np.array_equal(vectors[0], again)
    assert cached.stats.memory_hits == 1 and cached.stats.computed == len(QUESTIONS)


def test_a_failing_batch_fails_only_its_own_questions():
    gate = threading.Event()

    def encode(texts: list[str]) -> np.ndarray:
        gate.wait(5)
        if "bad" in texts:
            raise EmbeddingError("cannot embed")
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)

    with ThreadPoolExecutor(max_workers=1) as pool:
        batcher = QuestionBatcher(encode, pool, max_batch=2)
        first = batcher.submit("first")  # runs alone while the others queue
        queued = [batcher.submit(t) for t in ("ok", "bad", "fine", "x")]
        gate.set()
        assert first.result(5).tolist() == [5.0]
        with pytest.raises(EmbeddingError):
            queued[0].result(5)  # in the same batch as "bad"
        with pytest.raises(EmbeddingError):
            queued[1].result(5)
        assert queued[2].result(5).tolist() == [4.0] and queued[3].result(5).tolist() == [1.0]
    assert batcher.stats.calls == 2 and batcher.stats.largest == 2  # "first", then "fine" + "x"


def test_a_cancelled_question_is_skipped():
    gate = threading.Event()
    entered: list[list[str]] = []
    seen: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        entered.append(texts)
        gate.wait(5)
        seen.append(texts)
        return np.zeros((len(texts), 1), dtype=np.float32)

    with ThreadPoolExecutor(max_workers=1) as pool:
        batcher = QuestionBatcher(encode, pool)
        batcher.submit("running")
        gone, kept = batcher.submit("gone"), batcher.submit("kept")
        assert gone.cancel()
        gate.set()
        assert kept.result(5).shape == (1,)
    assert seen == [["running"], ["kept"]]


def test_views_of_a_question_just_embedded_need_no_encoder_thread(embedder):
    """With token views wanted (the intent model), a question's views come from memory on the event
    loop: they are returned even while the encoder's thread is held by other work."""
    embedder.token_views_sync(["an example the intent model fitted on"])
    question = "which cards can I order? (views without a hop)"

    async def scenario():
        vector = await embedder.embed_query(question)
        hold = threading.Event()
        embedder.model.executor.submit(hold.wait, 10)  # the encoder's only thread is now busy
        try:
            [views] = await asyncio.wait_for(embedder.token_views([question]), 2)
        finally:
            hold.set()
        return vector, views

    vector, views = asyncio.run(scenario())
    pooled = views.last.mean(0)
    assert np.dot(pooled / np.linalg.norm(pooled), vector) > 0.99999


def _cheapest_by_brute_force(lengths: list[int], batch_size: int) -> float:
    """Every way of cutting the sorted texts into consecutive passes, priced by pass_cost."""
    best = float("inf")
    for mask in itertools.product((False, True), repeat=len(lengths) - 1):
        cuts = [0] + [i + 1 for i, cut in enumerate(mask) if cut] + [len(lengths)]
        runs = list(itertools.pairwise(cuts))
        if all(b - a <= batch_size for a, b in runs):
            best = min(best, sum(pass_cost(b - a, lengths[b - 1]) for a, b in runs))
    return best


@pytest.mark.parametrize("batch_size", [2, 4, 16])
def test_forward_passes_are_cut_where_padding_costs_more_than_another_pass(batch_size):
    """Length-sorted texts are cut into the cheapest consecutive passes: a pass has a fixed cost (about
    30 tokens' worth), so a short text is padded to its neighbours' width rather than run alone,
    while very different widths get passes of their own; never more than batch_size per pass."""
    rng = np.random.default_rng(batch_size)
    for _ in range(40):
        lengths = sorted(int(n) for n in rng.integers(4, 90, size=int(rng.integers(1, 11))))
        chunks = _chunks(list(range(len(lengths))), lengths, batch_size)
        assert [i for chunk in chunks for i in chunk] == list(range(len(lengths)))
        assert all(1 <= len(chunk) <= batch_size for chunk in chunks)
        cost = sum(pass_cost(len(chunk), lengths[chunk[-1]]) for chunk in chunks)
        assert cost == pytest.approx(_cheapest_by_brute_force(lengths, batch_size))


def test_a_short_question_shares_a_pass_and_long_outliers_get_their_own():
    assert _chunks(list(range(8)), [5, 5, 6, 6, 9, 12, 30, 31], 16) == [[0, 1, 2, 3, 4, 5], [6, 7]]
    assert _chunks(list(range(4)), [12, 14, 15, 18], 16) == [[0, 1, 2, 3]]  # one pass, padding ~15%
    assert _chunks(list(range(3)), [8, 10, 200], 16) == [[0, 1], [2]]
    assert _chunks(list(range(5)), [5] * 5, 2) == [[0], [1, 2], [3, 4]]


def test_questions_of_mixed_lengths_embed_as_they_would_alone(embedder):
    short, long = "refund?", " ".join(["why was my card payment declined at the shop yesterday"] * 4)
    together = embedder.model.encode_questions([short, long, short + " please"])
    for text, row in zip([short, long, short + " please"], together, strict=True):
        np.testing.assert_allclose(embedder.model.encode([text], 1)[0], row, rtol=0, atol=2e-6)


async def test_a_coroutine_gets_its_vector_its_error_and_a_cancelled_one_is_skipped():
    """The event loop's path (`embed`): a batch's results come back to the loop in one call."""
    import asyncio

    gate = threading.Event()
    entered: list[list[str]] = []
    seen: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        entered.append(texts)
        gate.wait(5)
        seen.append(texts)
        if "bad" in texts:
            raise EmbeddingError("cannot embed")
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)

    loop = asyncio.get_running_loop()
    calls: list[object] = []
    original = loop.call_soon_threadsafe

    def counting(callback, *args, **kwargs):  # the real loop method, counted
        calls.append(callback)
        return original(callback, *args, **kwargs)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            batcher = QuestionBatcher(encode, pool, max_batch=4)
            first = asyncio.ensure_future(batcher.embed("first"))
            await eventually(lambda: entered == [["first"]])  # "first" is in the encoder; the next ones queue
            gone = asyncio.ensure_future(batcher.embed("gone"))
            rest = [asyncio.ensure_future(batcher.embed(t)) for t in ("a", "bb", "ccc")]
            failing = [asyncio.ensure_future(batcher.embed(t)) for t in ("bad", "dddd")]
            await asyncio.sleep(0)  # one turn of the loop: each task queues its question and awaits its vector
            gone.cancel()
            gate.set()
            assert (await first).tolist() == [5.0]
            assert [(await r).tolist() for r in rest] == [[1.0], [2.0], [3.0]]
            for f in failing:
                with pytest.raises(EmbeddingError):
                    await f
    finally:
        del loop.call_soon_threadsafe
    assert seen == [["first"], ["a", "bb", "ccc"], ["bad", "dddd"]]  # the cancelled one was never encoded
    delivered = [c for c in calls if getattr(c, "__name__", "") == "_settle_all"]
    assert len(delivered) == 3  # one hand-over to the loop per batch, not one per question
