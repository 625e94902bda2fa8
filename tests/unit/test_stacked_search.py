"""A composite's children searched as one stacked view give each child exactly what its own search
gives (templates, scores, order, matched text), on both paths, and the view follows every change to a
child: an upsert, a delete, or a child replaced by a reload."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from server.stores import stacked
from server.stores.group_search import GroupSearch
from server.stores.memory import INT8_ABOVE_FLOATS, MemoryTemplateStore
from server.stores.packed import pack
from server.stores.stacked import _SORT_BELOW_PER_PACK, build_view
from tests.unit.test_memory_store import FLOAT32, INT8_ALWAYS, as_tuples, brute_force, corpus, fill, unit


def children(rng: np.random.Generator, counts: list[int], dim: int = 384):
    """Template lists for several stores; some vectors repeat across stores (ties between children)."""
    out = [corpus(rng, n, dim) for n in counts]
    for i in range(1, len(out)):
        tid, texts, vectors = out[i][0]
        vectors = vectors.copy()
        vectors[0] = out[i - 1][-1][2][0]  # the previous child's last vector, in this child's first template
        out[i][0] = (tid, texts, vectors)
    return out


def questions(rng: np.random.Generator, stores_templates, n: int = 6) -> list[np.ndarray]:
    flat = [t for templates in stores_templates for t in templates]
    picks = rng.choice(len(flat), n)
    qs = [unit(flat[i][2][0] + 0.3 * rng.standard_normal(flat[i][2].shape[1])) for i in picks]
    return [*qs, flat[0][2][0], flat[-1][2][-1]]  # questions equal to stored vectors


@pytest.mark.parametrize("threshold", [FLOAT32, INT8_ALWAYS])
def test_view_equals_each_store_searched_alone(threshold):
    rng = np.random.default_rng(21)
    stores_templates = children(rng, [1, 2, 40, 7, 120, 3])
    stores = [fill(t, threshold) for t in stores_templates]
    view = build_view([s.packed() for s in stores], threshold)
    assert (view.int8 is not None) == (threshold == INT8_ALWAYS)
    assert len(view.starts) < _SORT_BELOW_PER_PACK * len(view.packs)  # k-th values from one sort
    for q in questions(rng, stores_templates):
        for k in (1, 3, 5, 200):
            assert [as_tuples(h) for h in view.search(q, k)] == [as_tuples(s.search(q, k)) for s in stores]


def test_int8_view_of_small_stores_equals_exact_brute_force():
    """Ten stores small enough for float32 on their own, large enough together for the int8 pass: the
    view's scores are the correctly rounded ones (a store alone may differ in the last bits)."""
    rng = np.random.default_rng(4)
    stores_templates = children(rng, [220] * 10)  # packs large enough for a partition each
    stores = [fill(t, INT8_ABOVE_FLOATS) for t in stores_templates]
    assert not any(s.uses_int8_pass for s in stores)
    view = build_view([s.packed() for s in stores])
    assert view.int8 is not None and len(view.starts) >= _SORT_BELOW_PER_PACK * len(view.packs)
    for q in questions(rng, stores_templates, 4):
        got = view.search(q, 3)
        assert [as_tuples(h) for h in got] == [brute_force(t, q, 3) for t in stores_templates]


def test_undecided_scores_are_read_back_from_their_own_pack():
    """A score the int8 bounds cannot round (exact 1 + 2^-24 + 2^-80, just above a float32 midpoint) is
    decided from the vector itself, read from the second pack at its own offset."""
    rows = np.array([[1.0, 2.0**-24, 2.0**-80], [1.0, 2.0**-24, 0.0], [0.5, 0.0, 0.0]], dtype=np.float32)
    q = np.ones(3, dtype=np.float32)
    first = fill([("a", ["a"], rows[1:2]), ("c", ["c"], rows[2:])], INT8_ALWAYS)
    second = fill([("c2", ["c2"], rows[2:]), ("b", ["b0", "b1"], rows[[1, 0]])], INT8_ALWAYS)
    view = build_view([first.packed(), second.packed()], INT8_ALWAYS)
    assert view.int8 is not None
    got = [as_tuples(h) for h in view.search(q, 1)]
    assert got == [[("a", 1.0, "a")], [("b", 1 + 2.0**-23, "b1")]]


def test_many_examples_per_template_in_every_child():
    rng = np.random.default_rng(9)
    centres = unit(rng.standard_normal((3, 384)))
    stores_templates = [
        [
            (
                f"c{c}t{i}",
                [f"c{c}t{i} ex {j}" for j in range(60)],
                unit(centres[i % 3] + 0.5 * rng.standard_normal((60, 384))),
            )
            for i in range(5)
        ]
        for c in range(4)
    ]
    stores = [fill(t, INT8_ALWAYS) for t in stores_templates]
    view = build_view([s.packed() for s in stores], INT8_ALWAYS)
    for q in [unit(c + 0.4 * rng.standard_normal(384)) for c in centres]:
        assert [as_tuples(h) for h in view.search(q, 3)] == [brute_force(t, q, 3) for t in stores_templates]


def test_zero_question_and_bad_questions():
    rng = np.random.default_rng(2)
    stores = [fill(t, INT8_ALWAYS) for t in children(rng, [4, 5])]
    view = build_view([s.packed() for s in stores], INT8_ALWAYS)
    zero = view.search(np.zeros(384, dtype=np.float32), 2)
    assert [[h.template_id for h in hits] for hits in zero] == [["t0", "t1"], ["t0", "t1"]]
    assert view.search(np.ones(384, dtype=np.float32), 0) == [[], []]
    with pytest.raises(ValueError, match="dimension"):
        view.search(np.ones(3, dtype=np.float32), 1)
    with pytest.raises(ValueError, match="non-finite"):
        view.search(np.full(384, np.nan, dtype=np.float32), 1)
    with pytest.raises(ValueError, match="one dimension"):
        build_view([stores[0].packed(), pack([("x", ["x"], np.ones((1, 3), dtype=np.float32))])])


@pytest.mark.parametrize("threshold", [FLOAT32, INT8_ALWAYS])
def test_group_search_follows_upserts_deletes_and_reloaded_children(threshold):
    rng = np.random.default_rng(13)
    stores_templates = children(rng, [30, 30, 30])
    stores = [fill(t, threshold) for t in stores_templates]
    group = GroupSearch(threshold)
    group.warm("m", stores)
    q = questions(rng, stores_templates, 1)[0]

    def alone(stores):
        return [as_tuples(s.search(q, 3)) for s in stores]

    def together(stores):
        return [as_tuples(h) for h in group.search("m", stores, q, 3)]

    built = group._views["m"]
    assert together(stores) == alone(stores)
    assert group._views["m"] is built  # nothing changed: the warmed view served
    best = stores[1].search(q, 1)[0].template_id
    stores[1].delete([best])
    assert together(stores) == alone(stores) and best not in [h[0] for h in together(stores)[1]]
    stores[2].upsert("new", "h", ["the question itself"], q[None, :])
    assert together(stores)[2][0] == ("new", pytest.approx(1.0, abs=1e-6), "the question itself")
    assert together(stores) == alone(stores)
    reloaded = fill(stores_templates[0][:5], threshold)  # a reload: a new store object for the first child
    stores = [reloaded, *stores[1:]]
    assert together(stores) == alone(stores)
    assert len(together(stores)[0]) == 3 and {h[0] for h in together(stores)[0]} <= {"t0", "t1", "t2", "t3", "t4"}
    assert group._views["m"] is not built


def test_group_search_leaves_other_stores_to_themselves():
    """An empty store gives nothing, a store of another dimension its own error, and the others their hits."""
    rng = np.random.default_rng(3)
    stores_templates = children(rng, [6, 6])
    good = [fill(t, INT8_ALWAYS) for t in stores_templates]
    odd = fill([("o", ["o"], np.ones((1, 8), dtype=np.float32))], INT8_ALWAYS)
    empty = MemoryTemplateStore("e")
    q = questions(rng, stores_templates, 1)[0]
    results = GroupSearch(INT8_ALWAYS).search("m", [good[0], empty, odd, good[1]], q, 2)
    assert as_tuples(results[0]) == as_tuples(good[0].search(q, 2))
    assert results[1] == []
    assert isinstance(results[2], ValueError) and "dimension" in str(results[2])
    assert as_tuples(results[3]) == as_tuples(good[1].search(q, 2))
    failed = GroupSearch().search("m", good, np.full(384, np.inf, dtype=np.float32), 2)
    assert all(isinstance(r, ValueError) for r in failed)


@pytest.mark.parametrize("threshold", [FLOAT32, INT8_ALWAYS])
def test_many_questions_at_once_equal_each_searched_alone(threshold):
    """fit-thresholds searches a chunk of questions in one call: per question the same templates, scores
    (bit for bit), order and matched text as `search`, ties within a child and across children included."""
    rng = np.random.default_rng(31)
    stores_templates = children(rng, [1, 2, 40, 7, 3])
    vectors = stores_templates[2][5][2]
    stores_templates[2][9] = ("twin", ["twin text"], vectors[:1].copy())  # a tie with t5 inside one child
    stores = [fill(t, threshold) for t in stores_templates]
    view = build_view([s.packed() for s in stores], threshold)
    qs = np.stack([*questions(rng, stores_templates), unit(vectors[0]), np.zeros(384, np.float32)])
    for k in (1, 3, 5, 200, 0):
        many = view.search_many(qs, k)
        assert len(many) == len(qs)
        for q, got in zip(qs, many, strict=True):
            assert [as_tuples(h) for h in got] == [as_tuples(h) for h in view.search(q, k)]
    group = GroupSearch(threshold)
    empty = MemoryTemplateStore("e")
    together = group.search_many("m", [stores[0], empty, *stores[1:]], qs, 3)
    for q, got in zip(qs, together, strict=True):
        assert [as_tuples(r) for r in got] == [
            as_tuples(r) for r in group.search("m", [stores[0], empty, *stores[1:]], q, 3)
        ]


def test_int8_first_pass_for_more_questions_than_one_run_takes(monkeypatch):
    """The int8 view runs its first pass for a batch of questions in runs of INT8_MANY_ROWS: across the
    runs' edges (and a zero question inside one) each question gets `search`'s answer."""
    monkeypatch.setattr(stacked, "INT8_MANY_ROWS", 3)
    rng = np.random.default_rng(32)
    stores_templates = children(rng, [20, 5, 30])
    view = build_view([fill(t, INT8_ALWAYS).packed() for t in stores_templates], INT8_ALWAYS)
    qs = np.stack([*questions(rng, stores_templates, 5), np.zeros(384, np.float32)])
    for got, q in zip(view.search_many(qs, 3), qs, strict=True):
        assert [as_tuples(h) for h in got] == [as_tuples(h) for h in view.search(q, 3)]


def test_one_refused_question_among_many_fails_alone():
    rng = np.random.default_rng(5)
    stores_templates = children(rng, [6, 6])
    stores = [fill(t, FLOAT32) for t in stores_templates]
    qs = np.stack([questions(rng, stores_templates, 1)[0], np.full(384, np.nan, np.float32)])
    good, bad = GroupSearch(FLOAT32).search_many("m", stores, qs, 2)
    assert [as_tuples(r) for r in good] == [as_tuples(s.search(qs[0], 2)) for s in stores]
    assert all(isinstance(r, ValueError) and "non-finite" in str(r) for r in bad)


@pytest.mark.parametrize("threshold", [FLOAT32, INT8_ALWAYS])
async def test_concurrent_requests_share_one_search_and_get_what_each_gets_alone(threshold):
    """The request path: searches made in one turn of the event loop (one encoder batch of questions)
    share a `search_many`; each gets exactly `search`'s answer, also when the batch mixes k, store lists
    and a vector the stores refuse."""
    rng = np.random.default_rng(41)
    stores_templates = children(rng, [3, 30, 8])
    stores = [fill(t, threshold) for t in stores_templates]
    group = GroupSearch(threshold)
    qs = questions(rng, stores_templates)
    asks = [("m", stores, q, 3) for q in qs]
    asks += [("m", stores, qs[0], 1), ("m", stores[1:], qs[1], 3), ("m", stores, np.full(384, np.nan, np.float32), 3)]
    asks += [("m", stores, np.ones(5, np.float32), 3)]  # wrong dimension
    together = await asyncio.gather(*(group.search_request(*ask) for ask in asks))
    assert group.requests.stats.calls == 1 and group.requests.stats.questions == len(asks)
    for (name, members, q, k), got in zip(asks, together, strict=True):
        alone = group.search(name, members, q, k)
        assert len(got) == len(alone) == len(members)
        for g, a in zip(got, alone, strict=True):
            if isinstance(a, Exception):
                assert type(g) is type(a) and str(g) == str(a)
            else:
                assert as_tuples(g) == as_tuples(a)
