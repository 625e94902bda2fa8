"""In-memory template stores kept on disk as their packed matrix, so a warm start reads one file per adapter.

Filling a store from the embedding cache reads every vector as its own SQLite row: 2.2 s of a warm start
at 5,000 templates x 20 examples (issue 34). After a store is filled, its pack (packed.py: every vector in
one float32 matrix) is written to `store-<adapter>.npz` in the config cache's `stores/` folder, with the
index digest of each template in pack order (indexing.py: the hash of its embedding texts salted with the
model); the next start takes the file only when every template's digest is the one the file holds, so an
edited, added or removed template, or another model, fills the store as before and writes the file anew.

A pack large enough for the int8 first pass (stacked.py) is written with its int8 codes and error terms
(bounded_scores.py: 0.4 s of CPU at 105,000 vectors to make again), used by the first view built from it
and then dropped, as codes made at start are; they are taken only when written by the same quantising code
(a digest of bounded_scores.py), else made again.

The file is an uncompressed .npz (zip): a truncated or damaged one fails its CRC-32 or its shape checks,
is logged and ignored. A server's start removes the files of adapters that are gone, so the folder holds
at most one file per in-memory adapter, each the size of that adapter's vectors.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic_file import replace_file
from ..templates import Template
from . import bounded_scores
from .bounded_scores import Quantised
from .memory import MemoryTemplateStore
from .packed import Packed
from .stacked import INT8_ABOVE_FLOATS

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
                codes = _codes(data, matrix) if meta.get("quantised") == quantise_version() else None
            by_id = {t.id: t for t in templates}
            store.restore([(tid, digest, by_id[tid].embedding_texts()) for tid, digest in order], matrix, dim)
            packed = store.packed()
            if codes is not None and packed is not None:
                packed.hand_over(codes)
                self._read_back_later(adapter, packed, order)
            elif matrix.size > INT8_ABOVE_FLOATS:  # codes of older code, or none: made now and written with it
                self.save(adapter, store)
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
        order = [[t, hashes[t]] for t in packed.ids]
        meta: dict[str, object] = {"format": FORMAT, "adapter": adapter, "templates": order}
        arrays = {"matrix": packed.matrix}
        codes = None
        if packed.matrix.size > INT8_ABOVE_FLOATS:  # any view of it takes the int8 pass: its codes go too
            codes = packed.quantised()
            packed.hand_over(codes)  # made now, used by the view this start builds
            arrays |= {"codes": codes.codes, "scale": codes.scale, "err_l2": codes.err_l2, "l2": codes.l2}
            meta["quantised"] = quantise_version()
        header = np.frombuffer(json.dumps(meta).encode(), np.uint8)
        try:
            replace_file(path, lambda fh: np.savez(fh, allow_pickle=False, meta=header, **arrays))
        except OSError as exc:
            log.warning("store file of adapter %s not written (%s): %s", adapter, path, exc)
            return
        if codes is not None:
            self._read_back_later(adapter, packed, order)

    def _read_back_later(self, adapter: str, packed: Packed, order: list[list[str]]) -> None:
        """The adapter's file as where views built later read this pack's codes (it holds them now)."""
        packed.kept_on_disk(functools.partial(self._reread, adapter, packed.matrix, order))

    def _reread(self, adapter: str, matrix: np.ndarray, order: list[list[str]]) -> Quantised | None:
        """The codes of `matrix` from the adapter's file, if it still holds them (the same templates with the
        same digests, by the same quantising code); None otherwise or on any error (they are made again)."""
        try:
            with np.load(self.path(adapter), allow_pickle=False) as data:
                meta = json.loads(data["meta"].tobytes().decode())
                if meta.get("templates") != order or meta.get("quantised") != quantise_version():
                    return None
                return _codes(data, matrix)
        except Exception as exc:  # gone, rewritten mid-read, damaged: quantising again is only slower
            log.debug("store file of adapter %s not reread: %s", adapter, exc)
            return None

    def keep_only(self, adapters: list[str]) -> None:
        """Remove the files of adapters not in `adapters` (a server's start: the config as it is now)."""
        if self.directory is None:
            return
        kept = {self.path(a).name for a in adapters}
        with contextlib.suppress(OSError):
            for path in self.directory.glob("store-*.npz"):
                if path.name not in kept:
                    path.unlink(missing_ok=True)


@functools.cache
def quantise_version() -> str:
    """Digest of the code that makes int8 codes and their error bounds: codes written by other code are not used."""
    return hashlib.sha256(Path(bounded_scores.__file__).read_bytes()).hexdigest()[:16]


def _codes(data: Any, matrix: np.ndarray) -> Quantised:
    """The int8 codes kept with a matrix, checked against it (a mismatch raises: the file is ignored)."""
    rows = matrix.shape[0]
    codes = Quantised(data["codes"], data["scale"], data["err_l2"], data["l2"])
    if codes.codes.dtype != np.int8 or codes.codes.shape != matrix.shape:
        raise ValueError("codes of another shape than the matrix")
    if any(a.dtype != np.float64 or a.shape != (rows,) for a in (codes.scale, codes.err_l2, codes.l2)):
        raise ValueError("error terms of another shape than the matrix")
    return codes
