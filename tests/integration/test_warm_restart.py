"""A restart embeds nothing that has not changed: the in-memory stores come back from their files in the
config cache, and without them the persistent embedding cache (keyed by model + text) serves every text."""

from __future__ import annotations

import numpy as np

from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.stores.memory import MemoryTemplateStore
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, people_tree


def vectors(runtime) -> np.ndarray:
    store = runtime.stores["people"]
    assert isinstance(store, MemoryTemplateStore)
    packed = store.packed()
    assert packed is not None
    return packed.matrix.copy()


async def test_warm_restart_reembeds_nothing(tmp_path):
    config_dir = people_tree(tmp_path)
    first = await build_runtime(load_config(config_dir))
    cold = first.get("people").embedder.stats
    assert cold.computed > 0
    before = vectors(first)
    await first.close()

    async with running_runtime(config_dir) as second:
        assert second.get("people").embedder.stats.computed == 0  # the store came back from its file
        np.testing.assert_array_equal(vectors(second), before)


async def test_without_store_files_the_embedding_cache_serves_the_restart(tmp_path):
    config_dir = people_tree(tmp_path, BASE_CONFIG + "config_cache: {enabled: false}\n")
    first = await build_runtime(load_config(config_dir))
    cold = first.get("people").embedder.stats
    assert cold.computed > 0
    await first.close()

    async with running_runtime(config_dir) as second:
        warm = second.get("people").embedder.stats
        assert warm.computed == 0
        assert warm.hits >= cold.computed


async def test_changed_example_embeds_only_that_text(tmp_path):
    config_dir = people_tree(tmp_path)
    first = await build_runtime(load_config(config_dir))
    await first.close()
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text().replace('"headcount per department"', '"staff numbers by team"'))
    async with running_runtime(config_dir) as second:
        assert second.get("people").embedder.stats.computed == 1
