"""IntentModel: shapes, determinism, separable data, edge cases, lexical part, calibration range."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from server.intent.intent_model import IntentModel, LexicalFeatures, LexicalModel, SparseRows, fit_sparse_softmax
from server.intent.lexical_model import ROWWISE_DOT_ROWS

TOPICS = {
    "balance": ["what is my balance", "how much money do I have", "show my account balance"],
    "card": ["my card has not arrived", "where is my new card", "card delivery status"],
    "transfer": ["send money to a friend", "make a bank transfer", "transfer funds abroad"],
}


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _clusters(seed: int = 0, dim: int = 24, per: int = 6, noise: float = 0.15):
    """One well separated cluster of unit vectors per topic (a stand-in for an embedder)."""
    rng = np.random.default_rng(seed)
    centres = _unit(rng.normal(size=(len(TOPICS), dim)))

    def sample(i: int, n: int) -> np.ndarray:
        return _unit(centres[i] + noise * rng.normal(size=(n, dim))).astype(np.float32)

    examples = [sample(i, per) for i in range(len(TOPICS))]
    descriptions = [sample(i, 1)[0] for i in range(len(TOPICS))]
    return centres, examples, descriptions, sample


def _fit(with_texts: bool = True) -> tuple[IntentModel, Callable[[int, int], np.ndarray]]:
    _, examples, descriptions, sample = _clusters()
    texts = [[name, *TOPICS[name]] for name in TOPICS] if with_texts else None
    examples = [e[:3] for e in examples]  # one vector per text above
    return IntentModel.fit(list(TOPICS), examples, descriptions, texts), sample


def test_confidences_cover_every_template_within_0_1() -> None:
    model, sample = _fit()
    scores = model.confidences(sample(0, 1)[0], "what is my balance today")
    assert list(scores) == list(TOPICS)
    assert all(0.0 <= v <= 1.0 for v in scores.values())


def test_fit_is_deterministic() -> None:
    a, sample = _fit()
    b, _ = _fit()
    q = sample(1, 1)[0]
    assert a.confidences(q, "where is my card") == b.confidences(q, "where is my card")


def test_separable_clusters_are_classified_correctly() -> None:
    _, examples, descriptions, sample = _clusters(seed=3, per=8)
    model = IntentModel.fit(["a", "b", "c"], examples, descriptions)
    for i, key in enumerate(["a", "b", "c"]):
        for q in sample(i, 20):
            scores = model.confidences(q)
            assert max(scores, key=scores.get) == key


def test_ranking_follows_the_fused_score() -> None:
    """The calibration must not re-order templates (it once did, costing 0.7 points)."""
    model, sample = _fit()
    for i in range(3):
        q = sample(i, 1)[0]
        fused, _ = model.fused(q, "send money")
        scores = model.confidences(q, "send money")
        assert np.argsort(fused).tolist() == np.argsort(list(scores.values())).tolist()


def test_lexical_model_classifies_by_words() -> None:
    texts = [t for name in TOPICS for t in [name, *TOPICS[name]]]
    labels = np.repeat(np.arange(3), 4)
    model = LexicalModel.fit(texts, labels, 3)
    assert model is not None
    for i, question in enumerate(["balance of my account", "new card not arrived", "transfer money abroad"]):
        assert int(np.argmax(model.logits(question))) == i


def test_question_text_feeds_the_lexical_part() -> None:
    model, sample = _fit()
    q = sample(0, 1)[0]
    assert model.lexical is not None and model.lexical_weight > 0
    assert not np.allclose(model.fused(q)[0], model.fused(q, "transfer money abroad")[0])


def test_without_texts_or_question_the_lexical_part_is_skipped() -> None:
    model, sample = _fit(with_texts=False)
    assert model.lexical is None
    q = sample(2, 1)[0]
    with_texts, _ = _fit()
    assert np.allclose(model.fused(q)[0], with_texts.fused(q)[0], atol=1e-5)  # no question text: no lexical


def test_one_template() -> None:
    _, examples, descriptions, sample = _clusters()
    model = IntentModel.fit(["only"], examples[:1], descriptions[:1], [["only one", "a question"]])
    scores = model.confidences(sample(0, 1)[0], "a question")
    assert list(scores) == ["only"] and 0.0 <= scores["only"] <= 1.0


def test_templates_without_examples_use_their_description() -> None:
    _, _, descriptions, sample = _clusters(noise=0.05)
    keys = list(TOPICS)
    model = IntentModel.fit(keys, [d[None, :] for d in descriptions], descriptions, [[k] for k in keys])
    for i, key in enumerate(keys):
        scores = model.confidences(sample(i, 1)[0], "unrelated words")
        assert max(scores, key=scores.get) == key


def test_calibration_stays_in_0_1_for_extreme_inputs() -> None:
    model, _ = _fit()
    for q in (np.full(24, 1e6, np.float32), np.zeros(24, np.float32), -np.ones(24, np.float32)):
        with np.errstate(all="raise"):
            scores = model.confidences(q, "")
        assert all(0.0 <= v <= 1.0 for v in scores.values())


@pytest.mark.parametrize(
    "keys, examples, descriptions",
    [
        (["a", "a"], [np.ones((1, 4))] * 2, [np.ones(4)] * 2),
        ([], [], []),
        (["a", "b"], [np.ones((1, 4))], [np.ones(4)] * 2),
        (["a", "b"], [np.ones((1, 4)), np.zeros((0, 4))], [np.ones(4)] * 2),
    ],
)
def test_invalid_inputs_are_rejected(keys, examples, descriptions) -> None:
    with pytest.raises(ValueError):
        IntentModel.fit(keys, examples, descriptions)


def test_lexical_features_are_unit_rows_and_drop_unknown_words() -> None:
    features = LexicalFeatures(max_features=10_000).fit(["my card", "card arrived", "send money"])
    rows = features.transform(["my card arrived", "zzzz", ""])
    assert rows.rows == 3
    first = rows.data[rows.indptr[0] : rows.indptr[1]]
    assert np.isclose(np.linalg.norm(first), 1.0)
    assert rows.indptr[2] == rows.indptr[1]  # no word, bigram or character n-gram of "zzzz" was seen
    assert rows.indptr[3] == rows.indptr[2]  # empty text: empty row


def test_vocabulary_cap_keeps_the_most_common_features() -> None:
    features = LexicalFeatures(max_features=3).fit(["card card", "card x", "card y"])
    assert features.size == 3 and "w card" in features.vocabulary


def test_sparse_dot_matches_dense() -> None:
    rows = SparseRows(np.array([0, 2, 2, 3]), np.array([0, 3, 1]), np.array([1.0, 2.0, 3.0], np.float32))
    dense = np.zeros((3, 4), np.float32)
    dense[0, 0], dense[0, 3], dense[2, 1] = 1.0, 2.0, 3.0
    w = np.arange(8, dtype=np.float32).reshape(4, 2)
    assert np.allclose(rows.dot(w), dense @ w)


@pytest.mark.parametrize("rows", [1, ROWWISE_DOT_ROWS, ROWWISE_DOT_ROWS + 1, 500])
def test_sparse_dot_matches_dense_by_rows_and_by_blocks(rows: int) -> None:
    """A request's few rows go one product per row, a fit's many go in blocks: the same values either way."""
    rng = np.random.default_rng(rows)
    dense = np.where(rng.random((rows, 300)) < 0.05, rng.random((rows, 300)), 0.0).astype(np.float32)
    dense[rows // 2] = 0.0  # a question without a known feature
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))])
    sparse = SparseRows(indptr, np.nonzero(dense)[1], dense[dense != 0])
    w = rng.normal(size=(300, 40)).astype(np.float32)
    assert np.allclose(sparse.dot(w), dense @ w, atol=1e-5)


def test_questions_analysed_together_score_as_alone() -> None:
    """The request path scores the questions of concurrent requests in one call: each gets its own scores."""
    model, sample = _fit()
    queries = np.vstack([sample(i % 3, 1) for i in range(5)])
    texts = ["what is my balance", "card delivery", "send money", "my balance please", "where is my card"]
    together = model.analyse_many(queries, texts)
    for i, (query, text) in enumerate(zip(queries, texts, strict=True)):
        alone = model.analyse(query, text)
        assert np.allclose(together.fused[i], alone.fused, atol=1e-5)
        assert np.isclose(together.best_cosine[i], alone.best_cosine, atol=1e-6)


def test_sparse_softmax_learns_a_separable_problem() -> None:
    # class = which of two feature blocks is present
    indptr = np.arange(0, 41, 2)
    indices = np.array([[i % 2 * 2, i % 2 * 2 + 1] for i in range(20)]).ravel()
    rows = SparseRows(indptr, indices, np.full(40, 0.7, np.float32))
    y = np.arange(20) % 2
    w, b = fit_sparse_softmax(rows, y, 2, 4, steps=50, batch=8, learning_rate=0.1)
    assert ((rows.dot(w) + b).argmax(1) == y).all()


def test_words_of_any_script_become_features() -> None:
    features = LexicalFeatures(max_features=10_000).fit(["überweisung storniert", "東京 口座"])
    assert "w überweisung" in features.vocabulary and "w 東京" in features.vocabulary
    rows = features.transform(["Überweisung"])
    assert rows.indptr[1] > 0
