"""Which file each DuckDB database instance in this process reads, and which adapters hold it.

DuckDB keeps one instance per database file in a process, shared by every connection to that file: two
adapters on one file, or a reload's new adapter while the old one still serves. The instance keeps
reading the file it was opened on (the old inode) after the path is replaced, and a new connection gets
that same instance for as long as any connection to it is open. So an adapter that finds its file
replaced closes every connection to the stale instance before it reopens, and an adapter that joins an
open instance takes that instance's file identity, not the path's current one.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .file_identity import FileIdentity

LOCK = threading.RLock()  # opening, joining and closing instances: rare, one at a time per process


class Holder(Protocol):
    """An adapter with a connection to a database file and the identity of the file that connection reads."""

    @property
    def file_identity(self) -> FileIdentity | None: ...

    def drop_connection(self) -> None:
        """Close the connection (a query still running on it fails as a source error)."""


_holders: dict[str, weakref.WeakSet[Holder]] = {}


def key(path: str) -> str:
    """DuckDB's own name for the file (it resolves symlinks and `..`)."""
    return os.path.realpath(path)


def joined(path: str, holder: Holder, shared: bool) -> FileIdentity | None:
    """Register `holder` on the file; the identity of the file its connection reads: the one the other
    holders of a shared instance have, else the path's (a new instance reads the file as it is now)."""
    others = _holders.setdefault(key(path), weakref.WeakSet())
    identity = next((h.file_identity for h in others if h.file_identity is not None), None) if shared else None
    others.add(holder)
    return identity or FileIdentity.of(Path(path))


def left(path: str, holder: Holder) -> None:
    others = _holders.get(key(path))
    if others is not None:
        others.discard(holder)
        if not others:
            del _holders[key(path)]


def reopen_fresh(path: str, reopen: Callable[[], object]) -> None:
    """Close every connection to an instance whose file was replaced, then `reopen` (which joins)."""
    with LOCK:
        for holder in list(_holders.get(key(path), ())):
            identity = holder.file_identity
            if identity is not None and identity.problem() == "replaced":
                holder.drop_connection()
                left(path, holder)
        reopen()
