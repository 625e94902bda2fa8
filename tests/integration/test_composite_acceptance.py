"""The acceptance test through the composite: fitted at start, shown by test_routing, deciding execution."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from server.cli.fit import fit_command
from server.intent.acceptance import FEATURES
from server.runtime.build import Runtime
from server.service import answer as answering
from server.testing.composite_tree import (
    build_tree,
    make_composite,
    probe_runtime,
    sql_child,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHILDREN = ["hr", "sales"]
ON = {"intent_model": {"enabled": True}, "acceptance": {"enabled": True}, "string_similarity": {"enabled": False}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(tmp_path_factory) -> AsyncIterator[Runtime]:
    rt = await probe_runtime(tmp_path_factory.mktemp("acceptance"))
    yield rt
    await rt.close()


async def composite(runtime: Runtime, **keys):
    c = make_composite(runtime, CHILDREN, confidence_threshold=0.0, **keys)
    await c.start()
    return c


async def test_test_routing_shows_the_probability_and_its_parts(runtime):
    c = await composite(runtime, **ON)
    body = (await answering.explain_routing(c, "which customers are in the West region?")).body
    decision = body["routing_decision"]
    assert body["configuration"]["acceptance_enabled"] is True
    assert decision["selected_template"] == "customers_by_region" and decision["would_execute"] is True
    shown = decision["acceptance"]
    assert shown["template_id"] == "customers_by_region" and shown["accepted"] is True
    assert 0.0 <= shown["threshold"] <= shown["probability"] <= 1.0
    assert list(shown["parts"]) == list(FEATURES)
    assert all("acceptance" in m for m in body["all_matches"])


async def test_an_uncovered_question_is_not_executed_whatever_the_combined_score(runtime):
    c = await composite(runtime, **ON)
    body = (await answering.explain_routing(c, "what will the weather be like on mars tomorrow?")).body
    decision = body["routing_decision"]
    # confidence_threshold is 0: without the acceptance test this question would run its best template
    assert body["all_matches"][0]["above_threshold"] is True
    assert decision["acceptance"]["accepted"] is False
    assert decision["would_execute"] is False and decision["reason"] == "no_matches_above_threshold"


async def test_a_fixed_threshold_is_used_as_given(runtime):
    c = await composite(runtime, **{**ON, "acceptance": {"enabled": True, "threshold": 0.999}})
    body = (await answering.explain_routing(c, "which customers are in the West region?")).body
    assert body["routing_decision"]["acceptance"]["threshold"] == 0.999
    assert body["routing_decision"]["would_execute"] is False


async def test_describe_reports_what_the_self_calibration_expects(runtime):
    c = await composite(runtime, **ON)
    shown = c.describe()["multistage_selection"]["acceptance"]
    assert shown["enabled"] is True and shown["threshold"] == shown["self_calibrated_threshold"]
    assert shown["expected_out_of_scope_share"] == 0.15
    assert 0.0 <= shown["expected"]["in_scope_accuracy"] <= 1.0
    assert 0.0 <= shown["expected"]["out_of_scope_rejection"] <= 1.0


async def test_fit_thresholds_reports_the_self_calibration_with_and_without_labels(tmp_path):
    adapters = (
        "adapters:\n"
        + sql_child("hr", "people.db", "people")
        + "  - name: sales\n    type: duckdb\n    connection: {path: templates/sales.duckdb}\n"
        + '    templates: ["templates/sales/*.yaml"]\n'
        + "  - name: company\n    type: composite\n    child_adapters: [hr, sales]\n"
        + "    intent_model: {enabled: true}\n    acceptance: {enabled: true}\n"
    )
    config = build_tree(tmp_path, adapters=adapters)
    unlabelled = await fit_command(config, None, "company")
    expected = unlabelled["acceptance"]["self_calibration"]["expected"]
    assert set(expected) == {"threshold", "in_scope_accuracy", "out_of_scope_rejection", "accuracy"}
    labelled = tmp_path / "labelled.yaml"
    labelled.write_text(
        "questions:\n"
        "  - {question: 'which customers are in the West region?', adapter: sales, template: customers_by_region}\n"
        "  - {question: 'what will the weather be like on mars tomorrow?', adapter: null, template: null}\n"
    )
    both = await fit_command(config, labelled, "company")
    assert both["questions"] == 2
    assert both["acceptance"]["current"]["accuracy"] == 1.0  # the self-calibrated threshold gets both right
    assert both["acceptance"]["fitted_threshold"]["n"] == 2


async def test_fit_thresholds_without_labels_needs_an_acceptance_test(tmp_path):
    config = build_tree(tmp_path, adapters="adapters:\n" + sql_child("hr", "people.db", "people"))
    with pytest.raises(ValueError, match="no acceptance test"):
        await fit_command(config, None, "hr")
