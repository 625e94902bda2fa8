"""Bodies a database file accepted, kept on disk so that a warm start does not ask it again (issue 34).

Checking templates against their source (source_check.py) costs one DESCRIBE (DuckDB) or EXPLAIN (SQLite)
per body: 2.2 s of a warm start at 5,000 DuckDB templates, for bodies and a database that had not
changed. Whether a database accepts a body depends only on the checked statement and on the database: so
an acceptance is kept under a key made of the source's identity (`source_identity`: the database file's
path, device, inode, size, modification and change times, and its write-ahead log's; the driver's version;
the connection settings), the body and its parameters' types. A changed file, body or driver is a new key.

Only acceptances are kept: a refused body is asked again on every load, so its message is always what
the database says now. Sources whose answer can change without their file changing are never kept
(`source_identity` returns None: a server database, SQLite in memory, or a DuckDB adapter allowed to read
other files).

The file, `source_checks.json` in the config cache's directory, holds one JSON object of keys; one that
is unreadable or of another shape is ignored (logged, rewritten whole by the next save), and a start keeps
only the keys that load used (at most `MAX_KEYS`), so the file cannot grow without bound.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from ..atomic_file import write_json
from ..templates import Template

log = logging.getLogger(__name__)

FORMAT = "accepted-bodies/1"
FILE = "source_checks.json"
MAX_KEYS = 200_000  # ~7 MB of file: beyond this, the least recently added keys go


def file_identity(path: Path) -> str | None:
    """A database file as it is now (with its write-ahead log, if any): None when it cannot be read."""
    parts = []
    for candidate, required in ((path, True), (Path(f"{path}.wal"), False), (Path(f"{path}-wal"), False)):
        try:
            st = os.stat(candidate)
        except OSError:
            if required:
                return None
            parts.append("-")
            continue
        # the change time too: a write that puts the modification time back still moves it
        parts.append(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
    return f"{path.resolve()}|{'|'.join(parts)}"


class AcceptedBodies:
    """The keys of (source identity, body) pairs a source accepted; shared by the adapters of one load."""

    def __init__(self, directory: Path | None) -> None:
        self.path = directory / FILE if directory is not None else None
        self._lock = threading.Lock()
        self._keys: dict[str, None] | None = None  # insertion order: oldest first
        self._used: set[str] = set()
        self._dirty = False
        self.hits = 0  # bodies answered from the file (tests and the benchmark read these)
        self.asked = 0

    @staticmethod
    def key(identity: str, template: Template) -> str:
        """The checked statement's inputs: the body and the type of every parameter a bind may name."""
        types = sorted((p.name, str(p.type)) for p in template.parameters)
        text = json.dumps([FORMAT, identity, template.body, types])
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def unknown(self, identity: str | None, templates: list[Template]) -> list[Template]:
        """The templates this source has not accepted before (all of them when it has no identity)."""
        if identity is None or self.path is None:
            self.asked += len(templates)
            return templates
        keys = self._loaded()
        rest = []
        with self._lock:
            for template in templates:
                k = self.key(identity, template)
                if k in keys:
                    self._used.add(k)
                else:
                    rest.append(template)
        self.hits += len(templates) - len(rest)
        self.asked += len(rest)
        return rest

    def accepted(self, identity: str | None, templates: Iterable[Template]) -> None:
        """Remember that the source accepted these templates' bodies."""
        if identity is None or self.path is None:
            return
        keys = self._loaded()
        with self._lock:
            for template in templates:
                k = self.key(identity, template)
                self._used.add(k)
                if k not in keys:
                    keys[k] = None
                    self._dirty = True

    def save(self, prune: bool) -> None:
        """Write what changed; with `prune` (a server's start, which checks every adapter), keep only the
        keys this load used."""
        if self.path is None or self._keys is None:
            return
        with self._lock:
            keys = self._keys
            if prune and len(keys) != len(self._used):
                keys = {k: None for k in keys if k in self._used}
                self._dirty = True
            if len(keys) > MAX_KEYS:
                keys = dict.fromkeys(list(keys)[-MAX_KEYS:])
                self._dirty = True
            self._keys = keys
            if not self._dirty:
                return
            self._dirty = False
            snapshot = list(keys)
        self._write({"format": FORMAT, "keys": snapshot})

    def _loaded(self) -> dict[str, None]:
        with self._lock:
            if self._keys is None:
                self._keys = self._read()
            return self._keys

    def _read(self) -> dict[str, None]:
        assert self.path is not None
        try:
            stored = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("source check cache %s ignored (it is rebuilt): %s", self.path, exc)
            self._dirty = True
            return {}
        keys = stored.get("keys") if isinstance(stored, dict) and stored.get("format") == FORMAT else None
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            log.warning("source check cache %s ignored (it is rebuilt): not a file of this format", self.path)
            self._dirty = True
            return {}
        return dict.fromkeys(keys)

    def _write(self, value: object) -> None:
        assert self.path is not None
        try:
            write_json(self.path, value)
        except OSError as exc:
            log.warning("source check cache not written (%s): %s", self.path, exc)
