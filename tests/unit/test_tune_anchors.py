"""tune-encoder's out-of-scope anchors: write verbs the templates use stay in scope, request verbs are
replaced, questions are left alone, a batch always gets as many anchors, and the operator's file reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from server.cli.tune import out_of_scope_questions
from server.embedding.base import EmbeddingError
from server.runtime.settings import AppSettings
from server.tune.anchors import (
    WRITE_VERBS,
    AnchorBatches,
    Anchors,
    allowed_verbs,
    object_of,
    read_out_of_scope,
    write_verb_anchors,
)


def test_a_write_verb_any_template_uses_in_any_form_is_never_generated() -> None:
    texts = ["cancel my order", "orders deleted last week", "show the dropped calls", "list customers"]
    verbs = allowed_verbs(texts)
    assert "cancel" not in verbs and "delete" not in verbs and "drop" not in verbs
    assert "truncate" in verbs and "update" in verbs
    assert set(allowed_verbs(["list customers"])) == set(WRITE_VERBS)
    assert allowed_verbs([f"{verb} it" for verb in WRITE_VERBS]) == []


def test_the_request_verb_is_replaced_and_questions_are_left_out() -> None:
    assert object_of("show me the returned orders?") == "the returned orders"
    assert object_of("list terminated employees") == "terminated employees"
    assert object_of("count of employees in Sales") == "employees in Sales"
    assert object_of("former staff") == "former staff"  # starts with its object: the verb goes in front
    assert object_of("How many people work here?") is None
    assert object_of("who manages Ada") is None
    assert object_of("show me") is None
    assert object_of("cancel my order") is None  # the operator's own write request


def test_generated_anchors_use_only_verbs_no_template_uses() -> None:
    texts = [
        ["list terminated employees", "how many people left", "former staff", "cancelled contracts"],
        ["show me the orders", "remove nothing here"],
    ]
    per_template, verbs = write_verb_anchors(texts, 5, np.random.default_rng(0))
    assert "cancel" not in verbs and "remove" not in verbs and verbs
    # the question and the texts starting with a write verb's form are left out
    assert len(per_template[0]) == 2 and len(per_template[1]) == 1
    for anchor in [a for own in per_template for a in own]:
        verb, _, rest = anchor.partition(" ")
        assert verb in verbs and rest in {"terminated employees", "former staff", "the orders"}
    only_questions, _ = write_verb_anchors([["how many?"], ["who is it"]], 2, np.random.default_rng(0))
    assert only_questions == [[], []]


def test_a_batch_always_gets_as_many_anchors() -> None:
    anchors = Anchors([["drop a"], [], ["drop c", "wipe c"]], ["weather in Paris"], ["drop", "wipe"])
    batches = AnchorBatches(anchors, 4, np.random.default_rng(0))
    mixed = batches([0, 2])
    assert len(mixed) == 4 and mixed.count("weather in Paris") == 2
    assert set(mixed) - {"weather in Paris"} <= {"drop a", "drop c", "wipe c"}
    assert batches([1]) == ["weather in Paris"] * 4  # no own anchors: the operator's fill it
    generated_only = AnchorBatches(Anchors([["drop a"], []], [], ["drop"]), 3, np.random.default_rng(0))
    assert generated_only([1]) == ["drop a"] * 3  # nothing of its own: any template's
    assert anchors.describe()["generated"] == 3 and anchors.describe()["operator"] == 1
    assert anchors.digest() != Anchors([["drop a"]], [], ["drop"]).digest()


def test_out_of_scope_questions_read_from_a_list_or_lines(tmp_path: Path) -> None:
    listed = tmp_path / "oos.yaml"
    listed.write_text("- delete all employees\n- 'what: the weather'\n")
    assert read_out_of_scope(listed) == ["delete all employees", "what: the weather"]
    lines = tmp_path / "oos.txt"
    lines.write_text("# questions we never answer\nwhat's the weather in Paris?\n\nbook me a flight: tomorrow\n")
    assert read_out_of_scope(lines) == ["what's the weather in Paris?", "book me a flight: tomorrow"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("- one\n- {two: 2}\n")
    with pytest.raises(ValueError, match="strings only"):
        read_out_of_scope(bad)


def test_the_tune_block_reads_questions_from_the_list_and_both_files(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "oos.txt").write_text("book me a flight\n")
    extra = tmp_path / "more.yaml"
    extra.write_text("- tell me a joke\n")
    settings = AppSettings.model_validate(
        {"tune": {"out_of_scope": ["what's the weather?"], "out_of_scope_file": "config/oos.txt"}}
    )
    questions = out_of_scope_questions(settings.tune, tmp_path, extra)
    assert questions == ["what's the weather?", "book me a flight", "tell me a joke"]
    with pytest.raises(EmbeddingError, match="not found"):
        out_of_scope_questions(settings.tune, tmp_path, tmp_path / "missing.txt")
    with pytest.raises(ValidationError, match="anchor_wieght"):
        AppSettings.model_validate({"tune": {"anchor_wieght": 2.0}})
    defaults = AppSettings().tune  # the feasibility recipe; write-verb anchors only when asked for (the demo)
    assert not defaults.write_verb_anchors and defaults.anchor_weight == 1.0
    assert (defaults.hard_negative_group, defaults.dropout) == (1, 0.1)
    assert AppSettings.model_validate({"tune": {"write_verb_anchors": True}}).tune.write_verb_anchors
