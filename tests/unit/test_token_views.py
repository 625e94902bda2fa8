"""Token views: the encoder's per-token states are the real ones, and the view model uses them as designed."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from server.embedding.base import TokenViews
from server.embedding.cache import CachedEmbedder
from server.embedding.minilm import MiniLMEmbedder, MiniLMModel
from server.intent.intent_model import IntentModel
from server.intent.token_views import PooledViewCache, TokenViewModel, max_pool, worth_fitting


def test_last_layer_states_mean_pool_to_the_sentence_embedding(minilm_embedder: MiniLMEmbedder) -> None:
    texts = ["my card has not arrived yet", "why was I charged a fee?", "hi"]
    vectors = minilm_embedder.embed_sync(texts)
    for text, vector, views in zip(texts, vectors, minilm_embedder.token_views_sync(texts), strict=True):
        assert views.ids[0] == 101 and views.ids[-1] == 102  # [CLS] ... [SEP], no padding
        assert views.last.shape == views.penultimate.shape == (len(views.ids), 384)
        pooled = views.last.mean(0)
        assert np.dot(pooled / np.linalg.norm(pooled), vector) > 0.99999, text
        assert not np.allclose(views.last, views.penultimate)


def test_batched_views_match_single_ones_despite_padding(minilm_embedder: MiniLMEmbedder) -> None:
    texts = ["a", "a much longer question about the exchange rate on my card payment"]
    batched = minilm_embedder.model.encode_views(texts, batch_size=2)
    for text, views in zip(texts, batched, strict=True):
        [single] = minilm_embedder.model.encode_views([text + " "], batch_size=1)  # not from the recent-question memory
        np.testing.assert_allclose(views.last, single.last, atol=1e-4)


def test_a_question_embedded_through_the_cache_brings_its_views_without_a_second_pass(
    minilm_embedder: MiniLMEmbedder, tmp_path
) -> None:
    cached = CachedEmbedder(minilm_embedder, None)
    assert cached.supports_token_views
    question = "how do I top up by bank transfer? (views test)"
    minilm_embedder.token_views_sync(["a template example"])  # as the intent model's fit does: views are wanted
    runs = []
    original = minilm_embedder.model._run
    minilm_embedder.model._run = lambda *a, **kw: runs.append(a[0]) or original(*a, **kw)  # type: ignore[method-assign]
    try:
        vector = asyncio.run(cached.embed_query(question))
        [views] = asyncio.run(cached.token_views([question]))
    finally:
        minilm_embedder.model._run = original  # type: ignore[method-assign]
    assert runs == [[question]]
    pooled = views.last.mean(0)
    assert np.dot(pooled / np.linalg.norm(pooled), vector) > 0.99999


def test_a_question_asked_again_gets_its_pooled_views_without_a_forward_pass(minilm_embedder: MiniLMEmbedder) -> None:
    """The embedding cache answers a repeated question without the encoder; its token views used to need a
    pass of their own once the encoder had forgotten them. A fitted model now keeps them pooled."""
    examples = [["my card has not arrived", "where is my new card"], ["I was charged a fee", "why is there a fee"]]
    model = TokenViewModel.fit(
        [minilm_embedder.token_views_sync(e) for e in examples],
        minilm_embedder.token_views_sync(["card delivery", "fees"]),
    )
    cache = PooledViewCache(model, size=2)
    asked = ["when will my card come? (pooled 1)", "what is this fee for? (pooled 2)"]
    fetched: list[list[str]] = []
    runs: list[list[str]] = []

    async def fetch(texts: list[str]) -> list[TokenViews]:
        fetched.append(list(texts))
        return await minilm_embedder.token_views(texts)

    async def scenario() -> None:
        first = await cache.pooled([*asked, asked[0]], fetch)
        assert fetched == [asked]  # one call, each question once
        np.testing.assert_array_equal(first.sif[2], first.sif[0])
        fresh = model.pool(minilm_embedder.token_views_sync(asked))
        np.testing.assert_allclose(first.sif[:2], fresh.sif, atol=1e-5)
        np.testing.assert_allclose(first.maxed[:2], fresh.maxed, atol=1e-5)
        original = minilm_embedder.model._run
        minilm_embedder.model._run = lambda *a, **kw: runs.append(a[0]) or original(*a, **kw)  # type: ignore[method-assign]
        try:
            again = await cache.pooled([asked[1], asked[0]], fetch)
        finally:
            minilm_embedder.model._run = original  # type: ignore[method-assign]
        assert runs == [] and len(fetched) == 1  # no fetch, no forward pass
        np.testing.assert_array_equal(again.sif, first.sif[[1, 0]])
        np.testing.assert_array_equal(again.maxed, first.maxed[[1, 0]])
        await cache.pooled(["a third question (pooled 3)"], fetch)  # holds 2: the least recently used goes
        await cache.pooled([asked[0]], fetch)
        assert len(fetched) == 2
        await cache.pooled([asked[1]], fetch)
        assert fetched[-1] == [asked[1]]
        many = [f"question {i} (pooled many)" for i in range(5)]  # more than it holds, in one call
        out = await cache.pooled(many, fetch)
        assert out.sif.shape == (5, 384) and out.maxed.shape == (5, 384)

    asyncio.run(scenario())


def _views(ids: list[int], last: np.ndarray, penultimate: np.ndarray | None = None) -> TokenViews:
    ids_a = np.array(ids, np.int64)
    return TokenViews(ids_a, last.astype(np.float32), (last if penultimate is None else penultimate).astype(np.float32))


def _toy(seed: int = 0):
    """Templates told apart by one rare token each; every text also carries two common tokens
    whose states are large and random (noise a uniform mean would keep)."""
    rng = np.random.default_rng(seed)
    dim, templates = 24, 20
    signal = np.eye(dim)[:templates] * 1.0

    def text(t: int) -> TokenViews:
        common = rng.normal(0, 1.0, (2, dim))
        last = np.vstack([common[0], signal[t] + rng.normal(0, 0.05, dim), common[1]])
        return _views([1, 10 + t, 2], last)

    examples = [[text(t) for _ in range(6)] for t in range(templates)]
    descriptions = [text(t) for t in range(templates)]
    return TokenViewModel.fit(examples, descriptions), text


def test_sif_pooling_discounts_tokens_every_template_uses() -> None:
    model, text = _toy()
    views = text(2)
    pooled = model.sif_weights.pool(views)
    # the rare token dominates: its weight is far above the shared tokens'
    assert np.dot(pooled / np.linalg.norm(pooled), np.eye(24)[2]) > 0.9
    uniform = views.last.mean(0)
    assert np.dot(uniform / np.linalg.norm(uniform), np.eye(24)[2]) < 0.9


def test_view_model_ranks_the_template_of_the_rare_token_first() -> None:
    model, text = _toy()
    for t in range(20):
        scores = model.fused(text(t))
        assert scores.shape == (20,) and int(np.argmax(scores)) == t


def test_max_pool_skips_special_tokens() -> None:
    penultimate = np.array([[9.0, 9.0], [1.0, 0.0], [0.0, 2.0], [9.0, 9.0]])
    assert max_pool(_views([101, 5, 6, 102], penultimate, penultimate)).tolist() == [1.0, 2.0]
    assert max_pool(_views([101, 102], penultimate[:2], penultimate[:2])).tolist() == [9.0, 9.0]


def test_intent_model_uses_views_only_when_attached_and_given() -> None:
    model, text = _toy()
    rng = np.random.default_rng(1)
    vectors = [rng.normal(size=(6, 8)).astype(np.float32) for _ in range(20)]
    im = IntentModel.fit(list(range(20)), vectors, [v[0] for v in vectors])
    q = vectors[0][0] + 0.01
    without = im.fused(q)[0]
    im.views = model
    np.testing.assert_array_equal(im.fused(q)[0], without)  # no views for the question: unchanged
    with_views = im.fused(q, views=text(3))[0]
    assert not np.allclose(with_views, without)
    assert int(np.argmax(with_views)) in (0, 3)


def test_fit_rejects_mismatched_inputs() -> None:
    _, text = _toy()
    with pytest.raises(ValueError):
        TokenViewModel.fit([[text(0)], [text(1)]], [text(0)])
    with pytest.raises(ValueError):
        TokenViewModel.fit([[text(0)], []], [text(0), text(1)])


def test_views_are_fitted_only_with_few_examples_per_template_and_texts_in_all() -> None:
    assert worth_fitting(77, 77 * 8)  # BANKING77 at k=8
    assert not worth_fitting(77, 10_003)  # all ~130 examples per intent: no gain measured there
    assert worth_fitting(100, 3200) and not worth_fitting(100, 3201)
    assert not worth_fitting(1000, 10_000)  # fit cost: ~3 ms per text


def test_questions_fetch_no_token_states_until_views_are_wanted(tmp_path) -> None:
    """Without an intent model using token views, a question's run fetches only the sentence vector
    (nothing kept); once views are asked for, later questions keep theirs."""
    model = MiniLMModel(tmp_path / "models")
    fresh = MiniLMEmbedder(model)
    kept: list[bool] = []
    original = model._run
    model._run = lambda *a, **kw: kept.append(kw["keep_views"]) or original(*a, **kw)  # type: ignore[method-assign]
    try:
        asyncio.run(fresh.embed_query("first question, nobody wants its views"))
        assert kept == [False] and not model._recent_views
        fresh.token_views_sync(["an example"])
        asyncio.run(fresh.embed_query("second question, after the fit asked for views"))
    finally:
        model._run = original  # type: ignore[method-assign]
    assert kept == [False, True, True]
    assert "second question, after the fit asked for views" in model._recent_views
