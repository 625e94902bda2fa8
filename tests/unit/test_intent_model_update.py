"""The intent model scales (issue 34 item 1): an edit refits only the changed templates, warm-started from
the previous weights; every fit stops at its next step when asked to; the fit's step cost is bounded."""

from __future__ import annotations

import numpy as np
import pytest

from server.intent.fit_control import FitCancelled, NeedsFullFit
from server.intent.intent_model import IntentModel
from server.intent.softmax_regression import normalise

DIM = 48
TEMPLATES = 40
EXAMPLES = 6


def tree(seed: int = 0):
    """Templates as clusters of unit vectors around their own centre (sharing one large component, as
    sentence embeddings do), with texts of their own words."""
    rng = np.random.default_rng(seed)
    shared = normalise(np.random.default_rng(99).normal(size=DIM))
    centres = normalise(2.0 * shared + rng.normal(size=(TEMPLATES, DIM)) / np.sqrt(DIM) * 3)
    noise = 0.5 / np.sqrt(DIM)
    examples = [normalise(c + noise * rng.normal(size=(EXAMPLES, DIM))).astype(np.float32) for c in centres]
    descriptions = [normalise(c + 0.3 * rng.normal(size=DIM) / np.sqrt(DIM)).astype(np.float32) for c in centres]
    keys = [("child", f"t{i}") for i in range(TEMPLATES)]
    texts = [
        [f"topic{i} summary"] + [f"ask about topic{i} variant {j}" for j in range(EXAMPLES)] for i in range(TEMPLATES)
    ]
    return keys, examples, descriptions, texts, centres


def test_an_edit_refits_only_the_changed_template():
    keys, examples, descriptions, texts, centres = tree()
    model = IntentModel.fit(keys, examples, descriptions, texts)
    assert model.fit_info.kind == "full" and model.fit_info.templates == TEMPLATES

    edited = [e.copy() for e in examples]
    edited[3][0] = normalise(centres[3] + 0.1)  # one example of template 3 changed
    new_texts = [list(t) for t in texts]
    new_texts[3][1] = "a new way to ask about topic3"
    updated = model.updated(keys, {keys[3]: (edited[3], descriptions[3])}, new_texts)

    assert updated.fit_info.kind == "incremental"
    assert updated.fit_info.templates == 1
    assert updated.fit_info.rows == EXAMPLES + 1  # its examples and its description, nothing else
    others = [i for i in range(TEMPLATES) if i != 3]
    # every other template keeps its fitted columns (embedding and lexical) as they were
    assert np.array_equal(updated.w[:, others], model.w[:, others])
    assert np.array_equal(updated.b[others], model.b[others])
    assert model.lexical is not None and updated.lexical is not None
    assert np.array_equal(updated.lexical.w[:, others], model.lexical.w[:, others])
    assert not np.array_equal(updated.w[:, 3], model.w[:, 3])
    # the edited template reads its new vectors, every other template the same rows as before
    start = int(updated.starts[3])
    assert np.array_equal(updated.examples.rows(np.array([start]))[0], np.asarray(edited[3][0], np.float32))
    same = np.flatnonzero(np.repeat(np.arange(TEMPLATES), updated.counts) != 3)
    assert np.array_equal(updated.examples.rows(same), model.examples.rows(same))


def test_a_new_template_is_ranked_first_for_its_own_questions_after_an_update():
    keys, examples, descriptions, texts, centres = tree(1)
    model = IntentModel.fit(keys[:-1], examples[:-1], descriptions[:-1], texts[:-1])
    updated = model.updated(keys, {keys[-1]: (examples[-1], descriptions[-1])}, texts)
    assert updated.keys == keys and updated.fit_info.templates == 1
    rng = np.random.default_rng(7)
    questions = normalise(centres[-1] + 0.5 * rng.normal(size=(20, DIM)) / np.sqrt(DIM)).astype(np.float32)
    analyses = updated.analyse_many(questions, ["ask about topic39 please"] * 20)
    assert (analyses.fused.argmax(axis=1) == TEMPLATES - 1).mean() >= 0.9


def test_a_removed_template_leaves_and_the_rest_stay():
    keys, examples, descriptions, texts, _ = tree(2)
    model = IntentModel.fit(keys, examples, descriptions, texts)
    kept = keys[:5] + keys[6:]
    updated = model.updated(kept, {}, texts[:5] + texts[6:])
    assert updated.keys == kept and updated.fit_info.templates == 0 and updated.fit_info.rows == 0
    assert np.array_equal(updated.w, model.w[:, [i for i in range(TEMPLATES) if i != 5]])


def test_an_update_that_moves_the_centre_asks_for_a_full_fit():
    keys, examples, descriptions, texts, _centres = tree(3)
    model = IntentModel.fit(keys[:2], examples[:2], descriptions[:2], texts[:2])
    with pytest.raises(NeedsFullFit):
        model.updated(keys, {k: (examples[i], descriptions[i]) for i, k in enumerate(keys[2:], 2)}, texts)


def test_a_fit_stops_at_the_next_step_when_cancelled():
    keys, examples, descriptions, texts, _ = tree(4)
    asked = 0

    def cancelled() -> bool:
        nonlocal asked
        asked += 1
        return asked > 5  # the sixth check stops it

    with pytest.raises(FitCancelled):
        IntentModel.fit(keys, examples, descriptions, texts, cancelled)
    assert asked == 6  # checked at every step: it stopped at once instead of running its remaining steps

    model = IntentModel.fit(keys, examples, descriptions, texts)
    with pytest.raises(FitCancelled):
        model.updated(keys, {keys[0]: (examples[0], descriptions[0])}, texts, lambda: True)
