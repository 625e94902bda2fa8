"""A large store's file carries its int8 codes (stores/snapshot.py): the view built from a restored store
takes them instead of quantising again, and they are exactly what quantising gives (issue 34)."""

from __future__ import annotations

import json
import zipfile

import numpy as np

from server.stores.bounded_scores import quantise
from server.stores.memory import MemoryTemplateStore
from server.stores.packed import Packed
from server.stores.snapshot import StoreSnapshots
from server.templates import Template

TEMPLATES, EXAMPLES, DIM = 300, 19, 384  # 6,000 vectors: above the int8 pass's threshold


def filled() -> tuple[MemoryTemplateStore, list[Template], dict[str, str]]:
    rng = np.random.default_rng(7)
    templates = [
        Template.model_validate(
            {
                "id": f"t{i}",
                "description": f"template {i}",
                "nl_examples": [f"ex {i} {j}" for j in range(EXAMPLES - 1)],
                "body_key": "sql",
                "body": "SELECT 1",
            }
        )
        for i in range(TEMPLATES)
    ]
    store = MemoryTemplateStore("big")
    digests = {}
    for t in templates:
        vectors = rng.standard_normal((EXAMPLES, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        digests[t.id] = f"digest-{t.id}"
        store.upsert(t.id, digests[t.id], t.embedding_texts(), vectors)
    return store, templates, digests


def saved_and_restored(tmp_path) -> tuple[StoreSnapshots, MemoryTemplateStore, MemoryTemplateStore, Packed]:
    """A large store written to its file, and a second store restored from it (with its pack)."""
    store, templates, digests = filled()
    snapshots = StoreSnapshots(tmp_path)
    snapshots.save("big", store)
    restored = MemoryTemplateStore("big")
    assert snapshots.restore("big", restored, templates, digests, DIM)
    packed = restored.packed()
    assert packed is not None
    return snapshots, store, restored, packed


def test_a_restored_large_store_hands_its_view_the_codes_quantising_gives(tmp_path):
    _, store, restored, packed = saved_and_restored(tmp_path)
    assert len(packed._ahead) == 1
    made = quantise(packed.matrix, packed.bounds)
    for name in ("codes", "scale", "err_l2", "l2"):
        assert np.array_equal(getattr(packed._ahead[0], name), getattr(made, name))
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = rng.standard_normal(DIM).astype(np.float32)
        assert restored.search(q, 5) == store.search(q, 5)
    assert restored.uses_int8_pass and not packed._ahead  # taken by the view, then dropped


def test_codes_written_by_other_quantising_code_are_made_again_and_written(tmp_path):
    store, templates, digests = filled()
    snapshots = StoreSnapshots(tmp_path)
    snapshots.save("big", store)
    path = snapshots.path("big")
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    with np.load(path) as data:
        meta = json.loads(data["meta"].tobytes())
        arrays = {name: data[name] for name in data.files if name != "meta"}
    assert set(members) >= {"codes.npy", "matrix.npy"}
    meta["quantised"] = "older code"
    np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
    restored = MemoryTemplateStore("big")
    assert snapshots.restore("big", restored, templates, digests, DIM)
    packed = restored.packed()
    assert packed is not None and len(packed._ahead) == 1  # made again, and written again with the file
    with np.load(path) as data:
        assert json.loads(data["meta"].tobytes())["quantised"] != "older code"
        assert np.array_equal(data["codes"], quantise(packed.matrix, packed.bounds).codes)


def test_a_view_rebuilt_later_reads_the_codes_back_from_the_file_while_it_holds_this_pack(tmp_path, monkeypatch):
    snapshots, _, _, packed = saved_and_restored(tmp_path)
    templates, digests = filled()[1:]
    made = quantise(packed.matrix, packed.bounds)
    packed.quantised()  # the first view takes the codes handed over
    calls = []

    def counted(*args):
        calls.append(args)
        return quantise(*args)

    monkeypatch.setattr("server.stores.packed.quantise", counted)
    again = packed.quantised()  # another store was edited: the view over this pack is built anew
    assert not calls
    for name in ("codes", "scale", "err_l2", "l2"):
        assert np.array_equal(getattr(again, name), getattr(made, name))
    # the file now holds another pack of the adapter (an edit of it): this pack's codes are made again
    other = MemoryTemplateStore("big")
    edited = dict(digests, t0="digest-edited")
    assert not snapshots.restore("big", other, templates, edited, DIM)
    vectors = np.eye(EXAMPLES, DIM, dtype=np.float32)
    for t in templates:
        other.upsert(t.id, edited[t.id], t.embedding_texts(), vectors)
    snapshots.save("big", other)
    calls.clear()
    assert np.array_equal(packed.quantised().codes, made.codes) and len(calls) == 1
    snapshots.path("big").unlink()  # gone: made again, no error
    assert np.array_equal(packed.quantised().codes, made.codes) and len(calls) == 2
