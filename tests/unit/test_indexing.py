"""Incremental indexing: only changed embedding texts are embedded, removed templates leave the store,
renamed templates and adapters keep their vectors, and a model change invalidates stored vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from server.embedding.factory import build_embedder
from server.embedding.openai_compatible import OpenAICompatibleEmbedder
from server.embedding.settings import EmbeddingSettings
from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.stores.indexing import diff_hashes, index_digest, sync_store
from server.stores.memory import MemoryTemplateStore
from server.templates import Template
from server.testing.configs import people_tree


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    settings = EmbeddingSettings(cache={"enabled": False, "path": str(tmp_path_factory.mktemp("e") / "c.sqlite3")})
    return build_embedder(settings, Path("."))


def template(tid: str, description: str, *examples: str) -> Template:
    return Template(id=tid, description=description, nl_examples=list(examples), body_key="sql", body="SELECT 1")


def test_diff_reports_added_changed_removed_and_renamed():
    report = diff_hashes({"a": "1", "b": "2", "c": "3", "d": "4"}, {"a": "1", "b": "9", "c2": "3", "e": "5"})
    assert report.added == ["e"]
    assert report.changed == ["b"]
    assert report.removed == ["d"]
    assert report.renamed == [("c", "c2")]
    assert report.unchanged == 1


def test_sync_embeds_only_what_changed_and_removes_what_left(embedder):
    store = MemoryTemplateStore("t")
    first = [template("a", "List employees", "who works here?"), template("b", "Count orders")]
    assert sync_store(store, first, embedder).texts_embedded == 3

    second = [template("a", "List employees", "who works here?", "show the staff"), template("c", "Total sales")]
    report = sync_store(store, second, embedder)
    assert (report.added, report.changed, report.removed) == (["c"], ["a"], ["b"])
    assert report.texts_embedded == 4  # a's three texts + c's one; b is gone and nothing else re-embedded
    assert store.template_hashes().keys() == {"a", "c"}
    assert len(store.vectors_of("a")) == 3

    again = sync_store(store, second, embedder)
    assert not again.touched and again.texts_embedded == 0 and again.unchanged == 2


def test_renamed_template_keeps_its_vectors_without_embedding(embedder):
    store = MemoryTemplateStore("t")
    sync_store(store, [template("old_name", "Revenue by month", "monthly revenue")], embedder)
    before = store.vectors_of("old_name")
    report = sync_store(store, [template("new_name", "Revenue by month", "monthly revenue")], embedder)
    assert report.renamed == [("old_name", "new_name")] and not report.added and not report.removed
    assert report.texts_embedded == 0 and report.vectors_reused == 1
    assert np.array_equal(store.vectors_of("new_name"), before)
    assert store.template_hashes().keys() == {"new_name"}


def test_vectors_of_another_model_are_never_reused(embedder):
    other = OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "some-other-model")
    t = template("a", "List employees")
    assert index_digest(t, embedder) != index_digest(t, other)
    assert index_digest(t, embedder) == index_digest(template("a", "List employees"), embedder)


async def test_reload_copies_on_write_so_the_serving_store_is_untouched(tmp_path):
    config_dir = people_tree(tmp_path)
    first = await build_runtime(load_config(config_dir))
    old_store = first.stores["people"]
    before = old_store.template_hashes()
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text().replace('"headcount per department"', '"staff numbers by team"'))
    second = await build_runtime(load_config(config_dir), previous=first)
    try:
        assert old_store.template_hashes() == before  # requests still on `first` see the old index
        assert second.stores["people"] is not old_store
        assert second.index_reports["people"].changed == ["headcount_by_department"]
        assert second.index_reports["people"].texts_embedded == 3
        assert second.embedders == first.embedders  # the same embedder objects carried over
        hits = second.stores["people"].search(second.get("people").embedder.embed_sync(["staff numbers by team"])[0], 1)
        assert hits[0].template_id == "headcount_by_department" and hits[0].score > 0.99
    finally:
        await second.close()
        await first.close(keep=[second])


async def test_unchanged_adapter_is_reused_whole_and_survives_closing_the_old_runtime(tmp_path):
    config_dir = people_tree(tmp_path)
    first = await build_runtime(load_config(config_dir))
    second = await build_runtime(load_config(config_dir), previous=first)
    try:
        assert second.reused_adapters == {"people"}
        assert second.get("people") is first.get("people")
        assert second.stores["people"] is first.stores["people"]
        await first.close(keep=[second])
        people = second.get("people").adapter
        result = await people.execute(people.templates["headcount_by_department"], {})
        assert len(result.rows) == 3  # its pool was not closed with the old runtime
    finally:
        await second.close()


async def test_reindex_rebuilds_the_store_from_scratch(tmp_path):
    config_dir = people_tree(tmp_path)
    first = await build_runtime(load_config(config_dir))
    rebuilt = await build_runtime(load_config(config_dir), previous=first, rebuild_stores=True)
    try:
        assert rebuilt.stores["people"] is not first.stores["people"]
        assert sorted(rebuilt.index_reports["people"].added) == sorted(first.index_reports["people"].added)
        assert rebuilt.index_reports["people"].texts_embedded == 10
    finally:
        await rebuilt.close()
        await first.close()
