"""What a fitted intent model keeps, and what the cache of fits keeps: no training copies, no fits nobody uses
when the directory holds them (a model is ~2.5 KB per example at 1,000 templates)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np

from server.intent.fitted_models import FittedModels
from server.intent.intent_model import IntentModel

TEXTS = {
    "balance": ["what is my balance", "how much money do I have", "show my account balance"],
    "card": ["my card has not arrived", "where is my new card", "card delivery status"],
    "transfer": ["send money to a friend", "make a bank transfer", "transfer funds abroad"],
    "limits": ["what is my daily limit", "raise my spending limit", "card limit please"],
}


def _vectors(seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    examples = [rng.normal(size=(3, 16)).astype(np.float32) for _ in TEXTS]
    return examples, [rng.normal(size=16).astype(np.float32) for _ in TEXTS]


def _fit(seed: int = 0) -> IntentModel:
    examples, descriptions = _vectors(seed)
    texts = [[name, *examples_] for name, examples_ in TEXTS.items()]
    return IntentModel.fit(list(TEXTS), examples, descriptions, texts)


def _held(model: IntentModel) -> tuple[int, int]:
    """(bytes of the distinct buffers the model's arrays live in, bytes of the arrays themselves)."""
    assert model.lexical is not None and model.desc is not None
    arrays = [model.mu, *model.examples.matrices, model.norms, model.centred_mu, model.starts, model.counts]
    arrays += [model.w, model.b]
    arrays += [model.desc, model.lexical.w, model.lexical.b, model.lexical.features.idf]

    def root(a: np.ndarray) -> np.ndarray:
        while isinstance(a.base, np.ndarray):
            a = a.base
        return a

    buffers = {id(root(a)): root(a) for a in arrays}
    return sum(b.nbytes for b in buffers.values()), sum(a.nbytes for a in arrays)


def test_a_fit_keeps_its_arrays_and_nothing_else():
    """The model's arrays own their buffers: no training matrix (examples and descriptions stacked) stays
    alive behind a view once the fit is done."""
    model = _fit()
    buffers, arrays = _held(model)
    assert buffers == arrays
    examples, descriptions = _vectors(0)
    changed = {"card": (examples[1][::-1].copy(), descriptions[1])}  # the same vectors in another order
    updated = model.updated(list(TEXTS), changed, [[k, *v] for k, v in TEXTS.items()])
    assert updated.fit_info.kind == "incremental"
    buffers, arrays = _held(updated)
    assert buffers == arrays


def test_the_cache_lets_go_of_fits_nobody_uses_when_the_directory_keeps_them(tmp_path: Path):
    fits = FittedModels()
    model = _fit()
    fits.put("a", model, tmp_path)
    assert fits.find("a", tmp_path) == (model, "memory")  # in use: found in memory
    fits.flush()  # its file is written by a thread of its own, which holds the model until then
    gone = weakref.ref(model)
    w = model.w.copy()
    del model
    gc.collect()
    assert gone() is None  # the cache did not keep it
    loaded, source = fits.find("a", tmp_path)
    assert source == "disk" and loaded is not None and np.array_equal(loaded.w, w)


def test_without_a_directory_the_cache_keeps_the_last_fits():
    fits = FittedModels(size=2)
    for key, seed in (("a", 0), ("b", 1), ("c", 2)):
        fits.put(key, _fit(seed))
    gc.collect()
    assert fits.get("a") is None  # the oldest left: two are kept
    assert fits.get("b") is not None and fits.get("c") is not None
