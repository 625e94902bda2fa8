"""The in-memory store's search is exact: it equals a brute-force reference in templates, scores and
order, on random, near-duplicate and tied vectors. Small stores score every vector with float32 BLAS
products (the reference does the same products); large stores prune with an int8 pass and return
correctly rounded scores (the reference uses exact arithmetic)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.stores import bounded_scores
from server.stores.bounded_scores import exact_scores
from server.stores.memory import INT8_ABOVE_FLOATS, MemoryTemplateStore
from server.stores.stacked import BLOCK_ROWS

FLOAT32 = 10**12  # int8_above_floats no store reaches: every vector in float32
INT8_ALWAYS = 0


def round_to_float32(row: np.ndarray, q: np.ndarray) -> float:
    """The exact dot product rounded to nearest float32, ties to even, computed independently of the
    store: fsum is the correctly rounded float64 of the exact sum, whose float32 rounding is the exact
    one unless it sits on a float32 midpoint, which rationals then decide."""
    products = (row.astype(np.float64) * q.astype(np.float64)).tolist()  # exact: 24 + 24 bits < 53
    total = math.fsum(products)
    single = np.float32(total)
    if float(single) == total or not math.isfinite(total):
        return float(single) + 0.0
    below = float(np.nextafter(single, np.float32(-np.inf))) if float(single) > total else float(single)
    above = float(np.nextafter(np.float32(below), np.float32(np.inf)))
    if total != (below + above) / 2:
        return float(single) + 0.0
    exact = sum(map(Fraction, products), Fraction(0))
    middle = (Fraction(below) + Fraction(above)) / 2
    if exact != middle:
        return (above if exact > middle else below) + 0.0
    return (below if int(np.float32(below).view(np.uint32)) % 2 == 0 else above) + 0.0


def brute_force(templates: list[tuple[str, list[str], np.ndarray]], q: np.ndarray, k: int):
    """Every vector scored exactly; best first, ties by insertion order; the first text at the best."""
    scored = []
    for index, (tid, texts, vectors) in enumerate(templates):
        scores = [round_to_float32(row, q) for row in vectors]
        best = max(scores)
        scored.append((-best, index, tid, texts[scores.index(best)]))
    scored.sort()
    return [(tid, -neg, text) for neg, _, tid, text in scored[:k]]


def float32_brute_force(templates: list[tuple[str, list[str], np.ndarray]], q: np.ndarray, k: int):
    """Float32 BLAS products over all vectors in blocks of BLOCK_ROWS (as the small store does; the
    last bits of a BLAS score depend on the matrix shape), best first, ties by insertion order, the
    first text at the best."""
    matrix = np.vstack([t[2] for t in templates])
    scores = np.concatenate([matrix[i : i + BLOCK_ROWS] @ q for i in range(0, len(matrix), BLOCK_ROWS)]).tolist()
    scored, row = [], 0
    for index, (tid, texts, vectors) in enumerate(templates):
        mine = scores[row : row + len(vectors)]
        row += len(vectors)
        scored.append((-max(mine), index, tid, texts[mine.index(max(mine))]))
    scored.sort()
    return [(tid, -neg, text) for neg, _, tid, text in scored[:k]]


def reference(templates, q, k, int8: bool):
    return brute_force(templates, q, k) if int8 else float32_brute_force(templates, q, k)


def fill(templates, int8_above_floats: int) -> MemoryTemplateStore:
    store = MemoryTemplateStore("t", int8_above_floats=int8_above_floats)
    for tid, texts, vectors in templates:
        store.upsert(tid, "h", texts, vectors)
    return store


def as_tuples(hits):
    return [(h.template_id, h.score, h.matched_text) for h in hits]


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def corpus(rng: np.random.Generator, n_templates: int, dim: int) -> list[tuple[str, list[str], np.ndarray]]:
    """Random unit vectors in topic clusters, 1 to 4 per template, with exact and 1-ulp near duplicates
    (inside and across templates) so that ties and near ties reach the k-th place."""
    centres = unit(rng.standard_normal((12, dim)))
    out = []
    for i in range(n_templates):
        count = int(rng.integers(1, 5))
        vectors = unit(centres[rng.integers(0, 12)] + 0.35 * rng.standard_normal((count, dim)))
        if i % 7 == 3 and out:
            vectors[0] = out[-1][2][0]  # same vector as the previous template: a tie broken by insertion
        if i % 11 == 5 and out:
            vectors[-1] = np.nextafter(out[-1][2][-1], np.float32(1))  # one ulp away
        if i % 13 == 2 and count > 1:
            vectors[1] = vectors[0]  # twice in one template: the first text is the match
        out.append((f"t{i}", [f"t{i} text {j}" for j in range(count)], vectors))
    return out


@pytest.fixture(scope="module")
def realistic():
    rng = np.random.default_rng(7)
    templates = corpus(rng, 700, 384)
    centres = np.stack([t[2][0] for t in templates[::50]])
    questions = [unit(c + 0.3 * rng.standard_normal(384)) for c in centres]
    questions += [templates[3][2][0], templates[5][2][-1]]  # a question equal to a stored vector
    return templates, questions


_rankings: dict[tuple[int, bool], list] = {}


def rankings(templates, questions, int8: bool) -> list:
    """Full brute-force rankings, computed once per corpus and path."""
    key = (len(templates), int8)
    if key not in _rankings:
        _rankings[key] = [reference(templates, q, len(templates), int8) for q in questions]
    return _rankings[key]


@pytest.mark.parametrize(
    ("count", "int8_above_floats", "int8"),
    [
        (700, FLOAT32, False),  # 1,700+ vectors in float32
        (700, INT8_ALWAYS, True),
        (700, INT8_ABOVE_FLOATS, False),  # the default up to 4,000 vectors of dimension 384
    ],
)
def test_search_equals_brute_force_at_384_dimensions(realistic, count, int8_above_floats, int8):
    templates, questions = realistic
    templates = templates[:count]
    store = fill(templates, int8_above_floats)
    assert store.uses_int8_pass == int8
    for q, ranking in zip(questions, rankings(templates, questions, int8), strict=True):
        for k in (1, 3, 5, 100):
            assert as_tuples(store.search(q, k)) == ranking[:k]


def test_default_threshold_takes_the_int8_pass_for_large_stores_only(realistic):
    templates, _ = realistic
    assert fill(templates[:100], INT8_ALWAYS).uses_int8_pass
    assert not MemoryTemplateStore("t").uses_int8_pass  # empty
    small, large = MemoryTemplateStore("t"), MemoryTemplateStore("t")
    for store, subset in ((small, templates), (large, templates * 3)):
        for i, (tid, texts, vectors) in enumerate(subset):
            store.upsert(f"{tid}.{i}", "h", texts, vectors)
    assert sum(len(t[2]) for t in templates) * 384 <= INT8_ABOVE_FLOATS < 3 * sum(len(t[2]) for t in templates) * 384
    assert not small.uses_int8_pass and large.uses_int8_pass


@settings(max_examples=120, deadline=None)
@given(data=st.data(), int8=st.booleans())
def test_search_equals_brute_force_on_tied_small_vectors(data, int8):
    """Coordinates from a handful of values make exact ties and equal-score templates common."""
    dim = data.draw(st.integers(2, 8))
    values = st.sampled_from([0.0, 0.5, -0.5, 1.0, -1.0, 0.25, 1e-3, 3.0, np.float32(1 / 3).item()])
    n = data.draw(st.integers(1, 12))
    templates = []
    for i in range(n):
        count = data.draw(st.integers(1, 3))
        vectors = np.array(
            data.draw(st.lists(st.lists(values, min_size=dim, max_size=dim), min_size=count, max_size=count)),
            dtype=np.float32,
        )
        templates.append((f"t{i}", [f"t{i}.{j}" for j in range(count)], vectors))
    q = np.array(data.draw(st.lists(values, min_size=dim, max_size=dim)), dtype=np.float32)
    k = data.draw(st.integers(1, n + 1))
    store = fill(templates, INT8_ALWAYS if int8 else FLOAT32)
    assert as_tuples(store.search(q, k)) == reference(templates, q, k, int8)


def test_int8_bound_holds_where_quantisation_errors_align():
    """Templates built so that each error term of the int8 estimate reaches most of its bound: a
    template on its own code grid pointing along the question's rounding error, and one whose own
    rounding error points along the quantised question. The exact score must stay inside the bound,
    and the construction must use most of it (else this test could not catch a bound too small)."""
    rng = np.random.default_rng(11)
    q = unit(rng.standard_normal(384))
    q64 = q.astype(np.float64)
    sq = np.abs(q64).max() / 127
    q_codes = np.rint(q64 / sq)
    q_err = q64 - sq * q_codes
    along_q_err = np.rint(63 * q_err / np.abs(q_err).max()).astype(np.float32)  # codes exactly, scale 1
    own_err_along_q = (rng.integers(-2, 3, 384) + 0.49 * np.sign(q_codes)).astype(np.float32)
    own_err_along_q[0] = 63  # the largest coordinate sets the template's scale to 1: codes are the steps
    templates = [("q_err", ["a"], along_q_err[None, :]), ("x_err", ["b"], own_err_along_q[None, :])]
    templates += corpus(rng, 40, 384)
    store = fill(templates, INT8_ALWAYS)
    int8 = store.view().int8
    approx, bound = int8.bounds(bounded_scores.query_of(q))
    exact = np.array([round_to_float32(row, q) for t in templates for row in t[2]])  # per vector, in order
    assert np.all(np.abs(exact - approx) <= bound)
    used = np.abs(exact - approx) / bound  # the first two templates have one vector each
    assert used[0] > 0.8 and used[1] > 0.6
    assert as_tuples(store.search(q, 5)) == brute_force(templates, q, 5)


def test_long_vectors_with_near_equal_scores_rank_exactly():
    """Long vectors whose exact scores differ by far less than a float32 dot product's rounding error
    (float32 BLAS here gets a top 5 disjoint from the exact one): the int8 pass must keep all of them
    and the exact scores decide."""
    rng = np.random.default_rng(5)
    q = unit(rng.standard_normal(384))
    templates = []
    for i in range(400):
        noise = rng.standard_normal(384)
        noise -= (noise @ q) * q  # orthogonal to the question: long vectors, scores near 1
        templates.append((f"t{i}", [f"t{i}"], (1e4 * unit(noise) + (1 + 1e-8 * i) * q).astype(np.float32)[None, :]))
    for threshold, int8 in ((FLOAT32, False), (INT8_ALWAYS, True)):
        assert as_tuples(fill(templates, threshold).search(q, 5)) == reference(templates, q, 5, int8)


def test_scores_are_correctly_rounded_where_a_float64_sum_is_not():
    # exact 1 + 2^-24 + 2^-80 lies just above the float32 midpoint 1 + 2^-24: it rounds up to
    # 1 + 2^-23, while any float64 sum loses 2^-80 and rounds the midpoint to even (1.0).
    rows = np.array([[1.0, 2.0**-24, 2.0**-80], [1.0, 2.0**-24, 0.0]], dtype=np.float32)
    q = np.ones(3, dtype=np.float32)
    assert np.float32(rows[0].astype(np.float64) @ q.astype(np.float64)) == 1.0
    assert exact_scores(rows, q).tolist() == [1 + 2.0**-23, 1.0]
    templates = [("a", ["a"], rows[1:]), ("b", ["b"], rows[:1])]
    assert as_tuples(fill(templates, INT8_ALWAYS).search(q, 2)) == [("b", 1 + 2.0**-23, "b"), ("a", 1.0, "a")]


def test_exact_scores_match_the_reference_on_random_rows():
    rng = np.random.default_rng(3)
    scales = rng.choice([1e-20, 1.0, 1e15], (300, 1)).astype(np.float32)
    rows = rng.standard_normal((300, 64)).astype(np.float32) * scales
    q = rng.standard_normal(64).astype(np.float32)
    assert exact_scores(rows, q).tolist() == [round_to_float32(r, q) for r in rows]


def test_zero_question_ranks_by_insertion_order(realistic):
    templates, _ = realistic
    for threshold in (FLOAT32, INT8_ALWAYS):
        hits = fill(templates[:10], threshold).search(np.zeros(384, dtype=np.float32), 3)
        assert as_tuples(hits) == [("t0", 0.0, "t0 text 0"), ("t1", 0.0, "t1 text 0"), ("t2", 0.0, "t2 text 0")]


def test_changes_are_searched_after_upsert_and_delete(realistic):
    templates, questions = realistic
    store = fill(templates, INT8_ALWAYS)
    q = questions[0]
    best = store.search(q, 1)[0].template_id
    store.delete([best])
    remaining = [t for t in templates if t[0] != best]
    assert as_tuples(store.search(q, 3)) == brute_force(remaining, q, 3)
    store.upsert("new", "h", ["the question itself"], q[None, :])
    assert store.search(q, 1)[0].template_id == "new"
    assert store.search(q, 1)[0].matched_text == "the question itself"


def test_bad_input_is_refused():
    store = MemoryTemplateStore("t")
    assert store.search(np.ones(3, dtype=np.float32), 3) == []
    store.upsert("a", "h", ["a"], np.ones((1, 3), dtype=np.float32))
    assert store.search(np.ones(3, dtype=np.float32), 0) == []
    with pytest.raises(ValueError, match="non-finite"):
        store.upsert("b", "h", ["b"], np.array([[1.0, np.nan, 0.0]], dtype=np.float32))
    with pytest.raises(ValueError, match="non-finite"):
        store.search(np.array([1.0, np.inf, 0.0], dtype=np.float32), 1)
    with pytest.raises(ValueError, match="dimension"):
        store.search(np.ones(4, dtype=np.float32), 1)
    with pytest.raises(ValueError, match="dimension"):
        store.upsert("c", "h", ["c"], np.ones((1, 4), dtype=np.float32))


def test_many_examples_per_template_equal_brute_force():
    """Pasted chat logs: 12 templates of 60 to 140 examples each (the per-template best is a segment
    max over many vectors), with a template's best example repeated inside it and across templates.
    Both paths equal their brute-force reference in templates, scores, order and matched text."""
    rng = np.random.default_rng(17)
    centres = unit(rng.standard_normal((4, 384)))
    templates = []
    for i in range(12):
        count = int(rng.integers(60, 141))
        vectors = unit(centres[i % 4] + 0.5 * rng.standard_normal((count, 384)))
        if i % 4 == 1:
            vectors[count // 2] = vectors[3]  # the same example twice: the first text is the match
        if i == 6:
            vectors[-1] = templates[2][2][5]  # an example of an earlier template: a tie across templates
        templates.append((f"t{i}", [f"t{i} example {j}" for j in range(count)], vectors))
    questions = [unit(c + 0.4 * rng.standard_normal(384)) for c in centres] + [templates[2][2][5], templates[5][2][3]]
    for threshold, int8 in ((FLOAT32, False), (INT8_ALWAYS, True), (INT8_ABOVE_FLOATS, False)):
        store = fill(templates, threshold)
        assert store.uses_int8_pass == int8
        for q in questions:
            ranking = reference(templates, q, len(templates), int8)
            for k in (1, 3, 12):
                assert as_tuples(store.search(q, k)) == ranking[:k]
