"""In-memory stores filled from their packed file at a warm start, never stale (issue 34, stores/snapshot.py).

A warm start at 5,000 templates spent 2.2 s reading 105,000 vectors row by row from the embedding cache.
The store's pack is now written to the config cache after it is filled, and the next start takes it
only when every template's index digest (its embedding texts, salted with the model) is the one the file
holds: an edited example is picked up, a damaged file is logged and ignored, a removed adapter's file goes."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from server.embedding.cache import CachedEmbedder
from server.routing.routable import RoutingSource
from server.runtime.build import Runtime, build_runtime
from server.runtime.loader import load_config
from server.stores.memory import MemoryTemplateStore
from server.testing.configs import PEOPLE_ADAPTER, people_tree, write

EDITED = "which people are on the Engineering team"


def stores_dir(root: Path) -> Path:
    return root / "data" / "config_cache" / "stores"


async def started(config: Path) -> tuple[Runtime, MemoryTemplateStore, int]:
    """A built runtime, the people adapter's store and how many template vectors came from the embedding
    cache (0: the store was filled from its file)."""
    runtime = await build_runtime(load_config(config))
    source = runtime.adapters["people"]
    assert isinstance(source, RoutingSource) and isinstance(source.store, MemoryTemplateStore)
    embedder = source.embedder
    assert isinstance(embedder, CachedEmbedder)
    return runtime, source.store, embedder.stats.hits + embedder.stats.misses


async def pack_of(config: Path) -> tuple[list[str], list[str], np.ndarray, int]:
    runtime, store, read = await started(config)
    try:
        packed = store.packed()
        assert packed is not None
        hits = store.search(packed.matrix[0], 3)
        assert hits[0].template_id == packed.ids[0] and abs(hits[0].score - 1.0) < 1e-5
        return packed.ids, packed.texts, packed.matrix.copy(), read
    finally:
        await runtime.close()


async def test_a_warm_start_fills_the_store_from_its_file_with_the_same_vectors(tmp_path):
    config = people_tree(tmp_path)
    ids, texts, matrix, read = await pack_of(config)
    assert read == len(texts)  # filled from the embedding cache (or the encoder), then written
    assert len(list(stores_dir(tmp_path).glob("store-*.npz"))) == 1
    again = await pack_of(config)
    assert again[3] == 0  # nothing read from the embedding cache
    assert (again[0], again[1]) == (ids, texts)
    assert np.array_equal(again[2], matrix)


async def test_an_edited_example_is_picked_up_at_the_next_start(tmp_path):
    config = people_tree(tmp_path)
    _ids, _texts, matrix, _ = await pack_of(config)
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text().replace("Show me the people in Sales", EDITED))
    _new_ids, new_texts, new_matrix, read = await pack_of(config)
    assert read == len(new_texts) and EDITED in new_texts and "Show me the people in Sales" not in new_texts
    row = new_texts.index(EDITED)
    assert not np.array_equal(new_matrix[row], matrix[row])
    restored = await pack_of(config)
    assert restored[3] == 0 and restored[1] == new_texts and np.array_equal(restored[2], new_matrix)


async def test_a_damaged_file_is_logged_ignored_and_written_again(tmp_path, caplog):
    config = people_tree(tmp_path)
    _, texts, matrix, _ = await pack_of(config)
    (path,) = stores_dir(tmp_path).glob("store-*.npz")
    damaged = bytearray(path.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF  # inside the matrix: its CRC-32 fails
    path.write_bytes(bytes(damaged))
    with caplog.at_level(logging.WARNING, logger="server.stores.snapshot"):
        _, _again, again_matrix, read = await pack_of(config)
    assert any("ignored" in r.getMessage() for r in caplog.records)
    assert read == len(texts) and np.array_equal(again_matrix, matrix)
    assert (await pack_of(config))[3] == 0  # written again whole


async def test_a_start_removes_the_file_of_an_adapter_that_is_gone(tmp_path):
    config = people_tree(tmp_path)
    await pack_of(config)
    write(tmp_path / "config" / "adapters" / "people.yaml", PEOPLE_ADAPTER.replace("name: people", "name: staff"))
    runtime = await build_runtime(load_config(config))
    await runtime.close()
    assert len(list(stores_dir(tmp_path).glob("store-*.npz"))) == 1  # staff's; people's is gone
