"""A tiny tune with out-of-scope anchors pushes them away from the templates: the same tune (same seed,
same pairs) without the margin term leaves them nearer, and the manifest records the anchors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.embedding.model_folder import bundled_folder
from server.testing.templates import template
from server.tune.run import TuneResult, tune_encoder
from server.tune.train import TuneSettings

TEMPLATES = {
    "hr": [
        template(
            tid="former_employees",
            description="Former employees who have left the company",
            examples=["list terminated employees", "ex-employees list", "former staff", "who left the company"],
        ),
        template(
            tid="orders_by_status",
            description="Orders with a given status",
            examples=["show returned orders", "orders that were sent back", "pending orders", "completed orders"],
        ),
    ]
}
OUT_OF_SCOPE = ["what's the weather in Paris?"]


def tiny_tune(target: Path, weight: float) -> TuneResult:
    # write-verb anchors asked for (off by default); no dropout, so the two runs differ by the anchors alone
    settings = TuneSettings(
        steps=6,
        learning_rate=1e-4,
        warmup=0.0,
        dropout=0.0,
        write_verb_anchors=True,
        anchors_per_batch=4,
        anchor_weight=weight,
    )
    return tune_encoder(TEMPLATES, bundled_folder(), target, settings, 0.0, lambda log: None, OUT_OF_SCOPE)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[TuneResult, TuneResult]:
    root = tmp_path_factory.mktemp("anchors")
    return tiny_tune(root / "with", 1.0), tiny_tune(root / "without", 0.0)


def test_anchors_fall_below_the_templates(runs: tuple[TuneResult, TuneResult]) -> None:
    anchored, plain = runs
    before = anchored.validation["before"]["anchors"]
    assert before == plain.validation["before"]["anchors"]  # the same anchors, embedded by the same base model
    assert before["count"] == 1 + anchored.anchors["generated"] and anchored.anchors["generated"] >= 4
    near_with = anchored.validation["after"]["anchors"]["max_cosine_mean"]
    near_without = plain.validation["after"]["anchors"]["max_cosine_mean"]
    print(f"anchors' nearest centroid: base {before['max_cosine_mean']}, tuned {near_without}, anchored {near_with}")
    assert near_with < near_without - 0.05 and near_with < before["max_cosine_mean"] - 0.05
    own_with = anchored.validation["after"]["anchors"]["templates_own_cosine_mean"]
    assert own_with > before["templates_own_cosine_mean"]  # the templates' own texts still pulled together


def test_the_manifest_records_the_anchors(runs: tuple[TuneResult, TuneResult]) -> None:
    anchored, _ = runs
    manifest = json.loads((anchored.model_path / "intent_router_tune.json").read_text())
    assert manifest["anchors"] == anchored.anchors and manifest["anchors"]["operator"] == 1
    assert {"delete", "drop", "truncate"} <= set(manifest["anchors"]["write_verbs"])
    assert manifest["settings"]["anchor_weight"] == 1.0 and manifest["settings"]["anchor_margin"] == 0.3
    assert len(manifest["anchors"]["hash"]) == 32
