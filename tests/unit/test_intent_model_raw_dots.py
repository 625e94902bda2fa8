"""The intent model scores from its examples' raw vectors (no centred copy, issue 34): the same scores and
the same ranking as the centred-copy formula it replaced, and the raw vectors read from a store's pack."""

from __future__ import annotations

import numpy as np

from server.intent import intent_model, model_files
from server.intent.example_rows import ExampleRows
from server.intent.intent_model import FUSION, LSE_TEMPERATURE, IntentModel
from server.intent.softmax_regression import normalise, standardise
from server.routing.stages.intent_rows import pack_rows
from server.stores.memory import MemoryTemplateStore

TEMPLATES, EXAMPLES, DIM = 120, 8, 384


def tree(seed: int = 0):
    """Unit vectors in template clusters around a strong shared direction (as sentence embeddings are: the
    centre is far from 0, so the centred cosines differ from the raw ones and cancellation would show)."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=DIM)
    shared /= np.linalg.norm(shared)
    centres = normalise(2.0 * shared + rng.normal(size=(TEMPLATES, DIM)) / np.sqrt(DIM) * 3)
    noise = 0.6 / np.sqrt(DIM)
    examples = [normalise(c + noise * rng.normal(size=(EXAMPLES, DIM))).astype(np.float32) for c in centres]
    descriptions = [normalise(c + 0.3 * rng.normal(size=DIM) / np.sqrt(DIM)).astype(np.float32) for c in centres]
    texts = [[f"topic{i} summary", *(f"ask about topic{i} way {j}" for j in range(EXAMPLES))] for i in range(TEMPLATES)]
    questions = normalise(centres[rng.integers(0, TEMPLATES, 300)] + 0.8 * rng.normal(size=(300, DIM)) / np.sqrt(DIM))
    return [("child", f"t{i}") for i in range(TEMPLATES)], examples, descriptions, texts, questions.astype(np.float32)


def centred_formula(model: IntentModel, raw: np.ndarray, q: np.ndarray, texts: list[str]):
    """The scores as computed before: a centred, renormalised float32 copy of every example."""
    centred = normalise(raw - model.mu).astype(np.float32)
    qc = normalise(q - model.mu)
    sims = qc @ centred.T
    top = sims.max(axis=1, keepdims=True)
    sums = np.add.reduceat(np.exp((sims - top) / LSE_TEMPERATURE), model.starts, axis=1)
    knn_lse = top + LSE_TEMPERATURE * np.log(sums / model.counts)
    offset = np.linalg.norm(q - model.mu, axis=1, keepdims=True)
    raw_sims = model.norms * (offset * sims + model.centred_mu) + (q @ model.mu)[:, None]
    knn_max = np.maximum.reduceat(raw_sims, model.starts, axis=1)
    z = standardise(np.stack([qc @ model.w + model.b, knn_lse, knn_max]))
    fused = FUSION["regression"] * z[0] + FUSION["knn_lse"] * z[1] + FUSION["knn_max"] * z[2]
    assert model.lexical is not None
    fused = fused + model.lexical_weight * standardise(model.lexical.logits_many(texts))
    return fused, knn_max, raw_sims


def test_scores_and_ranking_equal_the_centred_formula():
    keys, examples, descriptions, texts, questions = tree()
    model = IntentModel.fit(keys, examples, descriptions, texts)
    asked = [f"ask about topic{i % TEMPLATES} another way" for i in range(len(questions))]
    got = model.analyse_many(questions, asked)
    fused, knn_max, raw_sims = centred_formula(model, np.vstack(examples), questions, asked)
    assert np.allclose(got.raw_sims, raw_sims, atol=2e-6)
    assert np.allclose(got.knn_max, knn_max, atol=2e-6)
    assert np.allclose(got.fused, fused, atol=2e-4)
    assert (got.fused.argmax(axis=1) == fused.argmax(axis=1)).all()  # the same template ranked first
    confidence = model.calibrated(got.fused, got.best_cosine)
    assert np.allclose(confidence, model.calibrated(fused, knn_max.max(axis=1)), atol=1e-5)
    # the model holds one float32 copy of its examples (the raw one), not a second centred one
    assert sum(m.nbytes for m in model.examples.matrices) == TEMPLATES * EXAMPLES * DIM * 4


def test_the_model_reads_a_stores_pack_and_scores_the_same():
    keys, examples, descriptions, texts, questions = tree(1)
    model = IntentModel.fit(keys, examples, descriptions, texts)
    before = model.analyse_many(questions)
    store = MemoryTemplateStore("child")
    for (_, tid), rows, description in zip(keys, examples, descriptions, strict=True):
        store.upsert(tid, "h", ["d", *(f"e{j}" for j in range(EXAMPLES))], np.vstack([description, rows]))
    edited = store.vectors_of("t7").copy()
    edited[2] += 0.01  # one template's store rows differ from what the model was fitted on: it keeps its own
    store.upsert("t7", "h2", ["d", *(f"e{j}" for j in range(EXAMPLES))], edited)

    class Child:
        name = "child"

    Child.store = store  # type: ignore[attr-defined]
    shared = model.share(pack_rows([Child()]))
    assert shared == (TEMPLATES - 1) * EXAMPLES
    pack = store.packed()
    assert pack is not None and any(m is pack.matrix for m in model.examples.matrices)
    assert sum(m.nbytes for m in model.examples.matrices if m is not pack.matrix) == EXAMPLES * DIM * 4
    after = model.analyse_many(questions)  # the same vectors in another matrix: equal up to BLAS's last bits
    assert np.allclose(after.raw_sims, before.raw_sims, atol=1e-6) and np.allclose(after.fused, before.fused, atol=1e-4)
    assert (after.fused.argmax(axis=1) == before.fused.argmax(axis=1)).all()


def test_joined_rows_keep_their_order_across_matrices():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    first = ExampleRows.own(a)
    rows = ExampleRows.joined([(first, np.array([4, 0])), b[:2], (first, np.array([2]))])
    expected = np.vstack([a[4], a[0], b[:2], a[2]])
    assert np.array_equal(rows.rows(), expected)
    assert np.array_equal(rows.rows(np.array([2, 4])), expected[[2, 4]])
    q = rng.normal(size=(2, 4)).astype(np.float32)
    assert np.allclose(rows.dots(q), q @ expected.T, atol=1e-6)
    assert rows.wasteful()  # 5 of 7 rows read
    assert not ExampleRows.joined([(first, np.arange(5)), b]).wasteful()


def test_a_loaded_model_keeps_no_copy_the_packs_hold_and_is_column_major_where_they_hold_none(tmp_path):
    """A file's examples are kept as read until `share`: the rows the stores' packs hold are read from
    there (no column-major copy of them is ever made), the others become the model's own, column-major."""
    keys, examples, descriptions, texts, questions = tree(2)
    fitted = IntentModel.fit(keys, examples, descriptions, texts)
    assert model_files.save_model(tmp_path, "k", fitted) is not None
    before = fitted.analyse_many(questions)

    alone = model_files.load_model(tmp_path, "k")
    assert alone is not None and alone.share({}) == 0
    assert alone.examples.column_major
    assert np.allclose(alone.analyse_many(questions).fused, before.fused, atol=1e-4)

    loaded = model_files.load_model(tmp_path, "k")
    assert loaded is not None and not loaded.examples.column_major  # as read from the file
    store = MemoryTemplateStore("child")
    for (_, tid), rows, description in zip(keys, examples, descriptions, strict=True):
        store.upsert(tid, "h", ["d", *(f"e{j}" for j in range(EXAMPLES))], np.vstack([description, rows]))

    class Child:
        name = "child"

    Child.store = store  # type: ignore[attr-defined]
    assert loaded.share(pack_rows([Child()])) == TEMPLATES * EXAMPLES
    pack = store.packed()
    assert pack is not None and [m is pack.matrix for m in loaded.examples.matrices] == [True]
    assert np.allclose(loaded.analyse_many(questions).fused, before.fused, atol=1e-4)


def test_share_compares_block_by_block_and_keeps_only_the_templates_whose_rows_differ(monkeypatch):
    """`share` compares the stores' rows a block of templates at a time: a template whose rows differ in one
    value, one whose store holds another number of rows and one of another dimension keep the model's own,
    wherever they fall among the blocks; every other template reads its pack."""
    monkeypatch.setattr(intent_model, "SHARE_BLOCK_TEMPLATES", 7)
    keys, examples, descriptions, texts, _ = tree(4)
    model = IntentModel.fit(keys, examples, descriptions, texts)
    pack = np.vstack(examples)
    found = {key: (pack, np.arange(t * EXAMPLES, (t + 1) * EXAMPLES)) for t, key in enumerate(keys)}
    changed = pack.copy()
    changed[13 * EXAMPLES + 5, 100] = np.nextafter(changed[13 * EXAMPLES + 5, 100], np.float32(2))  # one ulp
    for t in (13, 14):  # the first block's last template, the next block's first: one of them differs
        found[keys[t]] = (changed, np.arange(t * EXAMPLES, (t + 1) * EXAMPLES))
    found[keys[50]] = (pack, np.arange(50 * EXAMPLES, 51 * EXAMPLES - 1))  # one row short
    found[keys[99]] = (np.zeros((EXAMPLES, DIM + 1), np.float32), np.arange(EXAMPLES))  # another dimension
    held = model._held_by(found, model.examples.in_order())
    assert held.tolist() == [t not in (13, 50, 99) for t in range(TEMPLATES)]
    assert model.share(found) == (TEMPLATES - 3) * EXAMPLES
    assert np.array_equal(model.examples.rows(), pack)  # the same vectors, read from both
