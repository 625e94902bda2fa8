"""Reloads with the persistent (embedded Chroma) store: changed templates re-indexed in place, removed
ones leave the collection, and a renamed adapter's old collection is emptied once no request uses it."""

from __future__ import annotations

from server.runtime.holder import RuntimeHolder
from server.stores.chroma import ChromaTemplateStore
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.polling import eventually

CHROMA_CONFIG = BASE_CONFIG.replace("store: {backend: memory}", "store: {backend: chroma, path: data/chroma}")


async def test_reloads_keep_the_persistent_store_in_step(tmp_path):
    config_dir = people_tree(tmp_path, CHROMA_CONFIG)
    library = tmp_path / "templates" / "people" / "people.yaml"
    adapter_file = config_dir / "adapters" / "people.yaml"
    holder = RuntimeHolder(config_dir, close_grace=0.0)
    await holder.start()
    closed: list[None] = []  # replaced configs closed once drained
    holder.retired_listeners.append(lambda: closed.append(None))
    try:
        store = holder.current.stores["people"]
        assert isinstance(store, ChromaTemplateStore) and store.count_templates() == 3

        text = library.read_text()
        cut = text.index("  - id: person_by_name")
        library.write_text(text[:cut].replace('"headcount per department"', '"staff numbers by team"'))
        status = await holder.reload()
        assert status.ok
        assert status.changes["templates"]["people"]["removed"] == ["person_by_name"]
        assert status.changes["templates"]["people"]["changed"] == ["headcount_by_department"]
        assert holder.current.stores["people"] is store  # updated in place
        assert set(store.template_hashes()) == {"people_in_department", "headcount_by_department"}
        fresh = ChromaTemplateStore(tmp_path / "data" / "chroma", "people")  # what a restart would read
        assert set(fresh.template_hashes()) == {"people_in_department", "headcount_by_department"}
        vector = holder.current.get("people").embedder.embed_sync(["staff numbers by team"])[0]
        assert store.search(vector, 1)[0].template_id == "headcount_by_department"

        adapter_file.write_text(adapter_file.read_text().replace("name: people", "name: staff"))
        status = await holder.reload()
        assert status.ok and status.changes["adapters"]["renamed"] == [{"from": "people", "to": "staff"}]
        assert holder.current.stores["staff"].count_templates() == 2
        await eventually(lambda: len(closed) == 2)  # both replaced runtimes have drained and are closed
        assert ChromaTemplateStore(tmp_path / "data" / "chroma", "people").count_templates() == 0
    finally:
        await holder.close()
