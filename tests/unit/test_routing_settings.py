"""Composite config: misspelt values are load errors listing the allowed values, unknown children are
errors, and per-composite overrides deep-merge over the global composite_retrieval block."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from server.config.errors import ConfigError
from server.routing.composite import CompositeAdapterSettings
from server.routing.settings import CompositeRetrievalSettings
from server.runtime.loader import load_config
from server.testing.configs import BASE_CONFIG, people_tree, write

GLOBAL = (
    BASE_CONFIG
    + """
composite_retrieval:
  string_similarity: {algorithm: levenshtein, weight: 0.3, compare_fields: [description]}
  scoring: {embedding_weight: 0.6}
  performance: {cache_ttl_seconds: 60}
"""
)


def tree(root: Path, composite: str, config: str = GLOBAL) -> Path:
    config_dir = people_tree(root, config)
    write(root / "config" / "adapters" / "c.yaml", composite)
    return config_dir


def load_errors(config_dir: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(config_dir)
    return [str(issue) for issue in info.value.issues]


def merged_for(config_dir: Path, name: str) -> CompositeRetrievalSettings:
    loaded = load_config(config_dir)
    settings = loaded.adapter(name)
    assert isinstance(settings, CompositeAdapterSettings)
    return loaded.app.composite_retrieval.merged(settings.overrides())


def test_tie_breaker_reranker_is_a_load_error_listing_allowed_values(tmp_path):
    config = BASE_CONFIG + "composite_retrieval:\n  scoring: {tie_breaker: reranker}\n"
    errors = load_errors(people_tree(tmp_path, config))
    assert len(errors) == 1
    assert errors[0].startswith("config/config.yaml:6: composite_retrieval.scoring.tie_breaker")
    for allowed in ("'embedding'", "'rerank'", "'string_similarity'", "'reranker'"):
        assert allowed in errors[0]


def test_misspelt_override_values_name_file_line_and_key(tmp_path):
    errors = load_errors(
        tree(
            tmp_path,
            """
        adapters:
          - name: c
            type: composite
            child_adapters: [people]
            scoring: {tie_breaker: reranker}
            string_similarity: {algorithm: soundex, aggregation: median}
        """,
        )
    )
    text = "\n".join(errors)
    assert "config/adapters/c.yaml:5: adapters[0].scoring.tie_breaker" in text
    assert "'jaro_winkler', 'levenshtein' or 'ratio'" in text and "soundex" in text
    assert "'max', 'avg' or 'weighted_avg'" in text and "median" in text


def test_unknown_and_disabled_children_are_load_errors(tmp_path):
    errors = load_errors(
        tree(
            tmp_path,
            """
        adapters:
          - name: retired
            type: sql
            enabled: false
            connection: {url: "sqlite:///templates/people.db"}
            templates: ["templates/people/*.yaml"]
          - name: c
            type: composite
            child_adapters: [people, nobody, retired]
        """,
        )
    )
    assert any("c.yaml:9: adapters[1].child_adapters: unknown child adapter 'nobody'" in e for e in errors)
    assert any("disabled child adapter 'retired'" in e for e in errors)


def test_nesting_duplicates_and_unknown_keys_are_errors(tmp_path):
    errors = load_errors(
        tree(
            tmp_path,
            """
        adapters:
          - name: inner
            type: composite
            child_adapters: [people]
          - name: outer
            type: composite
            child_adapters: [inner]
          - name: twice
            type: composite
            child_adapters: [people, people]
          - name: typo
            type: composite
            child_adapters: [people]
            paralel_search: false
          - name: typo2
            type: composite
            child_adapters: [people]
            reranking: {enabeld: true}
        """,
        )
    )
    text = "\n".join(errors)
    assert "adapters[1].child_adapters: child 'inner' has no templates (composites cannot nest)" in text
    assert "adapters[2].child_adapters: child adapters listed twice: ['people']" in text
    assert "adapters[3].paralel_search: unknown key" in text
    assert "adapters[4].reranking.enabeld" in text


@pytest.mark.parametrize("bad", ["cache_ttl_seconds: 0", "cache_max_entries: 0"])
def test_cache_bounds_must_be_positive(tmp_path, bad):
    config = BASE_CONFIG + f"composite_retrieval:\n  performance: {{{bad}}}\n"
    errors = load_errors(people_tree(tmp_path, config))
    assert any("performance." + bad.split(":")[0] in e for e in errors)


def test_reranking_enabled_needs_a_configured_provider(tmp_path):
    errors = load_errors(
        tree(
            tmp_path,
            """
        adapters:
          - name: c
            type: composite
            child_adapters: [people]
            reranking: {enabled: true, provider: nope}
        """,
        )
    )
    assert any("reranker 'nope' is not in config.yaml's rerankers section" in e for e in errors)


def test_overrides_deep_merge_over_the_global_block(tmp_path):
    config_dir = tree(
        tmp_path,
        """
        adapters:
          - name: plain
            type: composite
            child_adapters: [people]
          - name: tuned
            type: composite
            child_adapters: [people]
            string_similarity: {weight: 0.5}
            scoring: {tie_breaker: string_similarity}
            performance: {cache_max_entries: 7}
        """,
    )
    plain, tuned = merged_for(config_dir, "plain"), merged_for(config_dir, "tuned")
    assert plain.string_similarity.algorithm == tuned.string_similarity.algorithm == "levenshtein"
    assert plain.string_similarity.weight == 0.3 and tuned.string_similarity.weight == 0.5
    assert tuned.string_similarity.compare_fields == ["description"]  # kept from the global block
    assert plain.scoring.tie_breaker == "embedding" and tuned.scoring.tie_breaker == "string_similarity"
    assert tuned.scoring.embedding_weight == 0.6  # sibling key of the override survives
    assert (tuned.performance.cache_ttl_seconds, tuned.performance.cache_max_entries) == (60, 7)
    assert plain.performance.cache_max_entries == 10_000


def test_composite_defaults_are_the_seed_designs():
    s = CompositeAdapterSettings(name="c", type="composite", child_adapters=["a"])
    assert (s.confidence_threshold, s.max_templates_per_source, s.parallel_search, s.search_timeout, s.verbose) == (
        0.4,
        3,
        True,
        5.0,
        False,
    )
    r = CompositeRetrievalSettings()
    assert (r.reranking.weight, r.string_similarity.weight, r.scoring.embedding_weight) == (0.4, 0.2, 0.4)
    assert r.string_similarity.algorithm == "jaro_winkler"
    assert r.string_similarity.compare_fields == ["description", "nl_examples"]
    assert (r.string_similarity.min_threshold, r.string_similarity.aggregation) == (0.3, "max")
    assert (r.scoring.tie_breaker, r.performance.cache_ttl_seconds) == ("embedding", 300)


def test_acceptance_needs_the_intent_model_and_knows_its_keys():
    with pytest.raises(ValidationError, match=r"acceptance\.enabled needs intent_model\.enabled"):
        CompositeRetrievalSettings.model_validate({"acceptance": {"enabled": True}})
    with pytest.raises(ValidationError, match="thresold"):
        CompositeRetrievalSettings.model_validate({"acceptance": {"thresold": 0.5}})
