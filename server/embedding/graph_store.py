"""Keep a derived model file (the ONNX graph) on disk, rebuilt only when its source weights change.

The graph file name carries a digest of the weights and a tag of the builder's code, so "is it
up to date" is a file-exists check. Hashing 90 MB of weights costs ~0.2 s, so a small stamp file
remembers the digest for an unchanged (size, mtime) and a cold start skips the hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphSource:
    """Where to load the graph from: a file if one could be written, else the bytes in memory."""

    path: Path | None
    data: bytes | None
    built: bool


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def weights_digest(weights: Path, stamp: Path) -> str:
    """sha256 of `weights`, taken from `stamp` when the file's size and mtime are unchanged."""
    st = weights.stat()
    key = {"path": str(weights.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    with contextlib.suppress(OSError, ValueError):
        recorded = json.loads(stamp.read_text())
        if {k: recorded.get(k) for k in key} == key and isinstance(recorded.get("sha256"), str):
            return recorded["sha256"]
    digest = file_sha256(weights)
    with contextlib.suppress(OSError):
        _atomic_write(stamp, json.dumps({**key, "sha256": digest}).encode())
    return digest


def ensure_graph(
    weights: Path, graph_dir: Path | None, name: str, builder_tag: str, build: Callable[[], bytes]
) -> GraphSource:
    """Return an up-to-date graph for `weights`, building it with `build()` only when needed.

    With no `graph_dir`, or one that cannot be written, the graph is built in memory every time
    (slower start, same results) and a warning says why.
    """
    if graph_dir is None:
        return GraphSource(path=None, data=build(), built=True)
    try:
        graph_dir.mkdir(parents=True, exist_ok=True)
        digest = weights_digest(weights, graph_dir / f"{name}.weights.json")
    except OSError as exc:
        log.warning("cannot use graph cache dir %s (%s); building the model graph in memory", graph_dir, exc)
        return GraphSource(path=None, data=build(), built=True)
    target = graph_dir / f"{name}-{builder_tag}-{digest[:16]}.onnx"
    if target.is_file():
        return GraphSource(path=target, data=None, built=False)
    data = build()
    try:
        _atomic_write(target, data)
    except OSError as exc:
        log.warning("cannot write model graph to %s (%s); using it from memory", target, exc)
        return GraphSource(path=None, data=data, built=True)
    for stale in graph_dir.glob(f"{name}-*.onnx"):
        if stale != target:
            with contextlib.suppress(OSError):
                stale.unlink()
    return GraphSource(path=target, data=None, built=True)


def discard(source: GraphSource) -> None:
    """Remove a cached graph that failed to load, so that the next start rebuilds it."""
    if source.path is not None:
        with contextlib.suppress(OSError):
            source.path.unlink()


def _atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file + rename so that a crash or a concurrent process never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
