"""A restart embeds nothing that has not changed: the embedding cache is persistent, keyed by model + text."""

from __future__ import annotations

from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.testing.configs import people_tree


async def test_warm_restart_reembeds_nothing(tmp_path):
    config_dir = people_tree(tmp_path)
    first = await build_runtime(load_config(config_dir))
    cold = first.get("people").embedder.stats
    assert cold.computed > 0
    await first.close()

    second = await build_runtime(load_config(config_dir))
    try:
        warm = second.get("people").embedder.stats
        assert warm.computed == 0
        assert warm.hits >= cold.computed
    finally:
        await second.close()


async def test_changed_example_embeds_only_that_text(tmp_path):
    config_dir = people_tree(tmp_path)
    first = await build_runtime(load_config(config_dir))
    await first.close()
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text().replace('"headcount per department"', '"staff numbers by team"'))
    second = await build_runtime(load_config(config_dir))
    try:
        assert second.get("people").embedder.stats.computed == 1
    finally:
        await second.close()
