"""The derived-graph store rebuilds exactly when the weights (or the builder) change."""

from __future__ import annotations

import os
from pathlib import Path

from server.embedding.graph_store import ensure_graph, file_sha256, weights_digest


class Builder:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return f"graph #{self.calls}".encode()


def test_builds_once_then_reuses(tmp_path: Path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights v1")
    build = Builder()
    first = ensure_graph(weights, tmp_path / "g", "m", "b1", build)
    second = ensure_graph(weights, tmp_path / "g", "m", "b1", build)
    assert first.built and not second.built and build.calls == 1
    assert first.path == second.path and second.path.read_bytes() == b"graph #1"


def test_rebuilds_when_weights_or_builder_change_and_drops_stale_files(tmp_path: Path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"weights v1")
    build = Builder()
    old = ensure_graph(weights, tmp_path / "g", "m", "b1", build)
    weights.write_bytes(b"weights v2, longer")
    new = ensure_graph(weights, tmp_path / "g", "m", "b1", build)
    assert new.built and new.path != old.path and not old.path.exists()
    newer = ensure_graph(weights, tmp_path / "g", "m", "b2", build)
    assert newer.built and build.calls == 3
    assert sorted(p.name for p in (tmp_path / "g").glob("m-*.onnx")) == [newer.path.name]


def test_stamp_remembers_digest_until_the_file_changes(tmp_path: Path) -> None:
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"abc")
    stamp = tmp_path / "w.json"
    assert weights_digest(weights, stamp) == file_sha256(weights)
    assert stamp.is_file()
    weights.write_bytes(b"abcd")
    os.utime(weights, ns=(1, 1))
    assert weights_digest(weights, stamp) == file_sha256(weights)


def test_unwritable_dir_builds_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"w")
    source = ensure_graph(weights, blocker / "g", "m", "b1", Builder())
    assert source.path is None and source.data == b"graph #1" and source.built
    assert ensure_graph(weights, None, "m", "b1", Builder()).data == b"graph #1"
