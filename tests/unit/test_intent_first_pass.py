"""The intent model reads the search's int8 first pass (intent/first_pass.py): its candidates' kNN terms as the
float32 rows give them, every other product within its proven bound, the same best template, and the float32
rows whenever the view does not hold all of the model's examples."""

from __future__ import annotations

import numpy as np
import pytest

from server.intent.first_pass import FirstPass
from server.intent.fitted_models import FittedModels
from server.intent.intent_model import IntentModel
from server.routing.settings import IntentModelSettings
from server.routing.stages.intent_model import IntentModelStage
from server.routing.stages.intent_rows import pack_rows
from server.stores.bounded_scores import query_of
from server.stores.group_search import GroupSearch
from server.stores.memory import MemoryTemplateStore
from server.stores.stacked import RECENT_PRODUCTS, build_view
from tests.unit.test_intent_model_raw_dots import EXAMPLES, TEMPLATES, tree

CANDIDATES = 15


class Child:
    def __init__(self, name: str, store: MemoryTemplateStore) -> None:
        self.name, self.store = name, store


def children_of(keys, examples, descriptions) -> list[Child]:
    """Two children holding the templates (a description row, then the examples), as a composite's have."""
    stores = {"a": MemoryTemplateStore("a"), "b": MemoryTemplateStore("b")}
    for i, ((_, tid), rows, description) in enumerate(zip(keys, examples, descriptions, strict=True)):
        texts = ["d", *(f"e{j}" for j in range(EXAMPLES))]
        stores["a" if i % 2 else "b"].upsert(tid, "h", texts, np.vstack([description, rows]))
    return [Child(name, store) for name, store in stores.items()]


def fitted(seed: int):
    keys, examples, descriptions, texts, questions = tree(seed)
    children = children_of(keys, examples, descriptions)
    keys = [("a" if i % 2 else "b", tid) for i, (_, tid) in enumerate(keys)]
    model = IntentModel.fit(keys, examples, descriptions, texts)
    assert model.share(pack_rows(children)) == TEMPLATES * EXAMPLES
    packs = [child.store.packed() for child in children]
    return model, children, packs, questions


def test_candidates_are_exact_and_every_other_product_within_its_bound():
    model, _, packs, questions = fitted(0)
    view = build_view(packs, int8_above_floats=0)  # the int8 pass at any size
    first = FirstPass.of(view, model.examples)
    assert first is not None
    floats = model.analyse_many(questions)
    columns = np.argsort(-floats.knn_max, axis=1)[:, :CANDIDATES]  # what the search would hand the stage
    read = model.analyse_many(questions, None, None, first, columns.tolist())
    # the candidates' examples are scored exactly: their kNN terms equal the float32 rows' (BLAS's last bits)
    picked = np.concatenate([model.example_positions(c) for c in columns[:1]])
    assert np.allclose(read.raw_sims[0, picked], floats.raw_sims[0, picked], atol=2e-6)

    def of_candidates(scores: np.ndarray) -> np.ndarray:
        return np.take_along_axis(scores, columns, 1)

    assert np.allclose(of_candidates(read.knn_max), of_candidates(floats.knn_max), atol=2e-6)
    # the others are int8 estimates: close, not equal (the test would pass vacuously if nothing were estimated)
    gap = np.abs(read.raw_sims - floats.raw_sims)
    assert 0 < gap.max() < 0.02
    assert (read.fused.argmax(axis=1) == floats.fused.argmax(axis=1)).all()
    confidence = of_candidates(model.calibrated(read.fused, read.best_cosine))
    assert np.abs(confidence - of_candidates(model.calibrated(floats.fused, floats.best_cosine))).max() < 0.01


def test_a_zero_question_scores_zero_and_the_exact_list_is_required():
    model, _, packs, questions = fitted(1)
    first = FirstPass.of(build_view(packs, int8_above_floats=0), model.examples)
    assert first is not None
    zero = np.zeros((1, questions.shape[1]), np.float32)
    assert not first.dots(zero, [np.arange(3)]).any()
    with pytest.raises(ValueError, match="exactly scored"):
        model.analyse_many(questions[:2], None, None, first, [[0]])


def test_float32_rows_when_the_view_cannot_serve_the_model():
    model, _, packs, _ = fitted(2)
    assert FirstPass.of(build_view(packs), model.examples) is None  # a small view: float32 blocks, no int8 pass
    assert FirstPass.of(None, model.examples) is None
    other = build_view([packs[0], packs[0]], int8_above_floats=0)  # one child's pack missing from the view
    assert FirstPass.of(other, model.examples) is None


def test_the_stage_reads_its_composites_view_and_follows_a_new_one():
    model, children, _, questions = fitted(3)
    stage = IntentModelStage(IntentModelSettings(enabled=True), FittedModels())
    stage.model, stage.model_id = model, "enc"
    assert stage._first_pass(model) is None  # no search wired
    search = GroupSearch(int8_above_floats=0)
    stage.search = search
    assert stage._first_pass(model) is None  # no view built yet: float32 rows
    search.warm("enc", [child.store for child in children])
    first = stage._first_pass(model)
    assert first is not None and first.view is search.view("enc")
    assert stage._first_pass(model) is first  # worked out once per view and rows
    children[0].store.upsert("extra", "h", ["d", "e"], np.vstack([questions[0], questions[1]]))
    search.warm("enc", [child.store for child in children])  # an edit: a new view, without the model's old pack
    assert stage._first_pass(model) is None


def test_the_intent_model_reads_the_products_the_search_just_ran():
    model, _, packs, questions = fitted(4)
    view = build_view(packs, int8_above_floats=0)
    view.search(questions[0], 5)
    query = query_of(questions[0])
    kept = view.recent.get(query.int8()[0].tobytes())
    assert kept is not None and view.products([query])[0] is kept  # not computed again
    first = FirstPass.of(view, model.examples)
    assert first is not None
    alone = FirstPass.of(build_view(packs, int8_above_floats=0), model.examples)  # a view with nothing kept
    assert alone is not None
    assert np.array_equal(first.dots(questions[:1], [np.arange(4)]), alone.dots(questions[:1], [np.arange(4)]))
    view.search_many(questions[1 : 2 + RECENT_PRODUCTS], 5)
    assert view.recent.get(query.int8()[0].tobytes()) is None  # only the last questions are kept
