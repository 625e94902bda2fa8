"""The acceptance test: fitted from templates alone, it accepts covered questions and rejects the rest."""

from __future__ import annotations

import numpy as np
import pytest

from server.intent import acceptance as acc
from server.intent.intent_model import IntentModel
from server.intent.softmax_regression import normalise

DIM = 32


def clusters(templates: int, per: int, seed: int = 0, spread: float = 0.35):
    """Unit vectors around one random centre per template (the centres are returned too)."""
    rng = np.random.default_rng(seed)
    centres = normalise(rng.normal(size=(templates, DIM)))
    examples = [normalise(c + spread * rng.normal(size=(per, DIM)) / np.sqrt(DIM)) for c in centres]
    return centres, examples


@pytest.fixture(scope="module")
def fitted():
    centres, examples = clusters(12, 8)
    keys = [f"t{i}" for i in range(12)]
    model = IntentModel.fit(keys, examples, list(centres))
    return model, acc.Acceptance.fit(model, examples, list(centres), folds=4), centres


def judge(model, acceptance, q):
    analysis = model.analyse(q)
    chosen = int(np.argmax(analysis.fused))
    return acceptance.judge(analysis, model.keys[chosen])


def test_covered_questions_are_accepted_and_uncovered_rejected(fitted):
    model, acceptance, centres = fitted
    rng = np.random.default_rng(7)
    covered = [normalise(c + 0.35 * rng.normal(size=DIM) / np.sqrt(DIM)) for c in centres]
    others, _ = clusters(12, 1, seed=99)  # centres nothing covers
    p_in = [judge(model, acceptance, q)[0] for q in covered]
    p_out = [judge(model, acceptance, q)[0] for q in others]
    assert min(p_in) > max(p_out)
    assert all(p >= acceptance.threshold for p in p_in)
    assert all(p < acceptance.threshold for p in p_out)


def test_judgement_reports_every_feature_and_the_fit_its_expectation(fitted):
    model, acceptance, centres = fitted
    p, parts = judge(model, acceptance, centres[0])
    assert 0.0 <= p <= 1.0
    assert list(parts) == list(acc.FEATURES)
    # the contributions add up to the log-odds
    logodds = sum(v["contribution"] for v in parts.values()) + acceptance.model.b
    assert abs(1 / (1 + np.exp(-logodds)) - p) < 1e-3
    report = acceptance.to_json()
    assert report["threshold"] == report["self_calibrated_threshold"]
    assert 0.0 < report["expected"]["in_scope_accuracy"] <= 1.0
    assert 0.0 < report["expected"]["out_of_scope_rejection"] <= 1.0
    assert report["simulated_questions"] > 0
    assert acceptance.judge(model.analyse(centres[0]), "no such template") is None


def test_a_configured_threshold_replaces_the_self_calibrated_one(fitted):
    model, _, centres = fitted
    _, examples = clusters(12, 8)
    fixed = acc.Acceptance.fit(model, examples, list(centres), folds=4, threshold=0.9)
    assert fixed.threshold == 0.9 and fixed.model.default_threshold != 0.9


def test_a_larger_expected_out_of_scope_share_rejects_more():
    centres, examples = clusters(12, 8, spread=2.5)  # overlapping: a real trade-off
    keys = [f"t{i}" for i in range(12)]
    model = IntentModel.fit(keys, examples, list(centres))
    low = acc.Acceptance.fit(model, examples, list(centres), out_of_scope_share=0.05)
    high = acc.Acceptance.fit(model, examples, list(centres), out_of_scope_share=0.6)
    assert high.expectation.out_of_scope_rejection >= low.expectation.out_of_scope_rejection
    assert high.expectation.in_scope_accuracy <= low.expectation.in_scope_accuracy


def test_templates_with_a_single_example_are_simulated():
    centres, examples = clusters(4, 3)
    examples[0] = centres[:1]  # a template with only its description
    sim = acc.simulate([f"t{i}" for i in range(4)], examples, list(centres), folds=2)
    assert sim.x.shape == (len(sim.right), len(acc.FEATURES)) and sim.uncovered.any() and sim.right.any()


def test_too_few_templates_to_simulate_is_an_error():
    centres, examples = clusters(2, 1)
    model = IntentModel.fit(["a", "b"], examples, list(centres))
    with pytest.raises(ValueError, match="acceptance needs"):
        acc.Acceptance.fit(model, examples, list(centres))


def reference_features(model, analysis, chosen, profile):
    """The features' definitions, one template at a time (what `features_of` computes in one pass)."""
    others = np.delete(np.arange(len(model.keys)), chosen)
    start, count = int(model.starts[chosen]), int(model.counts[chosen])
    block = np.sort(analysis.raw_sims[start : start + count])[::-1]
    nearest = float(block[0])
    other_cos = float(analysis.knn_max[others].max())
    other_fused = float(analysis.fused[others].max())
    z = analysis.regression - analysis.regression.max()
    p = np.exp(z) / np.exp(z).sum()
    chosen_p = min(max(float(p[chosen]), 1e-6), 1 - 1e-6)
    return [
        nearest,
        nearest - other_cos,
        float(block[:3].mean()),
        nearest - float(profile.cohesion[chosen]),
        float(analysis.fused[chosen]),
        float(analysis.fused[chosen]) - other_fused,
        float(np.log(chosen_p / (1 - chosen_p))),
        float(-(p * np.log(np.maximum(p, 1e-12))).sum()),
        float(nearest >= other_cos),
        float(int(np.argmax(analysis.fused)) == chosen),
    ]


def test_all_candidates_at_once_equal_one_at_a_time(fitted):
    model, acceptance, centres = fitted
    keys = [model.keys[i] for i in (3, 0, 11, 5)] + ["not a template"]
    for q in [centres[3], centres[7] + centres[8], -centres[1]]:
        q = normalise(q)
        analysis = model.analyse(q)
        judged = acceptance.judge_all(analysis, keys)
        assert judged[-1] is None
        for key, verdict in zip(keys[:-1], judged[:-1], strict=True):
            index = model.keys.index(key)
            x = acc.features(model, analysis, index, acceptance.profile)
            assert x == pytest.approx(reference_features(model, analysis, index, acceptance.profile), abs=1e-5)
            single = acceptance.judge(analysis, key)
            assert verdict[0] == pytest.approx(single[0], rel=1e-5) and verdict[1] == single[1]
            assert verdict[1]["nearest_cosine"]["value"] == round(float(x[0]), 4)


def test_judgements_of_many_questions_show_the_parts_of_each(fitted):
    """judge_many (the routing's batch) keeps each candidate's features and builds its parts only when
    shown: the same probability and parts as judging that candidate alone."""
    model, acceptance, centres = fitted
    qs = np.stack([normalise(centres[2]), normalise(centres[4] + centres[5]), normalise(-centres[0])])
    analyses = model.analyse_many(qs)
    keys = [[model.keys[2], model.keys[7]], ["not a template"], [model.keys[5], model.keys[4], model.keys[0]]]
    judged = acceptance.judge_many(analyses, keys)
    assert judged[1] == [None]
    for row, (row_keys, verdicts) in enumerate(zip(keys, judged, strict=True)):
        for key, verdict in zip(row_keys, verdicts, strict=True):
            if key == "not a template":
                continue
            alone = acceptance.judge(model.analyse(qs[row]), key)
            assert alone is not None and verdict is not None
            assert verdict.probability == pytest.approx(alone[0], rel=1e-5)
            assert verdict.parts() == alone[1]
            index = model.keys.index(key)
            assert verdict.features == pytest.approx(
                acc.features(model, analyses.row(row), index, acceptance.profile), abs=1e-5
            )
