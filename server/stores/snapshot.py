"""In-memory template stores kept on disk as their packed matrix, so a warm start reads one file per adapter.

Filling a store from the embedding cache reads every vector as its own SQLite row: 2.2 s of a warm start
at 5,000 templates x 20 examples (issue 34). After a store is filled, its pack (packed.py: every vector in
one float32 matrix) is written to `store-<adapter>.npz` in the config cache's `stores/` folder, with the
index digest of each template in pack order (indexing.py: the hash of its embedding texts salted with the
model); the next start takes the file only when every template's digest is the one the file holds, so an
edited, added or removed template, or another model, fills the store as before and writes the file anew.

The file is an uncompressed .npz (zip): a truncated or damaged one fails its CRC-32 or its shape checks,
is logged and ignored. A server's start removes the files of adapters that are gone, so the folder holds
at most one file per in-memory adapter, each the size of that adapter's vectors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from pathlib import Path

import numpy as np

from ..atomic_file import replace_file
from ..templates import Template
from .memory import MemoryTemplateStore

log = logging.getLogger(__name__)

FORMAT = "intent-router-store/1"


class StoreSnapshots:
    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def path(self, adapter: str) -> Path:
        assert self.directory is not None
        return self.directory / f"store-{hashlib.sha256(adapter.encode()).hexdigest()[:24]}.npz"

    def restore(
        self, adapter: str, store: MemoryTemplateStore, templates: list[Template], digests: dict[str, str], dim: int
    ) -> bool:
        """Fill the empty `store` from the adapter's file when it holds exactly these templates' vectors
        (`digests`: index digests by template id) of dimension `dim`; False: fill it the usual way."""
        if self.directory is None or not dim:
            return False
        path = self.path(adapter)
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(data["meta"].tobytes().decode())
                order = meta["templates"] if meta.get("format") == FORMAT and meta.get("adapter") == adapter else None
                if order is None or len(order) != len(digests) or any(digests.get(t) != d for t, d in order):
                    return False  # written for other templates (or another format): filled and written anew
                matrix = data["matrix"]
            by_id = {t.id: t for t in templates}
            store.restore([(tid, digest, by_id[tid].embedding_texts()) for tid, digest in order], matrix, dim)
        except FileNotFoundError:
            return False
        except Exception as exc:  # truncated, bad CRC, not a zip, bad JSON, wrong shapes: fill it as before
            log.warning("store file %s of adapter %s ignored (it is rewritten): %s", path.name, adapter, exc)
            return False
        return True

    def save(self, adapter: str, store: MemoryTemplateStore) -> None:
        """Write the store's pack (nothing for an empty store); a failure only costs the next start its time."""
        if self.directory is None:
            return
        packed, hashes = store.packed(), store.template_hashes()
        path = self.path(adapter)
        if packed is None:
            path.unlink(missing_ok=True)
            return
        meta = {"format": FORMAT, "adapter": adapter, "templates": [[t, hashes[t]] for t in packed.ids]}
        header = np.frombuffer(json.dumps(meta).encode(), np.uint8)
        try:
            replace_file(path, lambda fh: np.savez(fh, allow_pickle=False, meta=header, matrix=packed.matrix))
        except OSError as exc:
            log.warning("store file of adapter %s not written (%s): %s", adapter, path, exc)

    def keep_only(self, adapters: list[str]) -> None:
        """Remove the files of adapters not in `adapters` (a server's start: the config as it is now)."""
        if self.directory is None:
            return
        kept = {self.path(a).name for a in adapters}
        with contextlib.suppress(OSError):
            for path in self.directory.glob("store-*.npz"):
                if path.name not in kept:
                    path.unlink(missing_ok=True)
