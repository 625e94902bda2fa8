"""The server's own SQLite files (the routing log, the embedding cache): never memory-mapped.

A memory-mapped file that is truncated or made read-only under the process kills it with SIGBUS at the
next access, and every request with it. WAL keeps its index in a mapped `-shm` file that every process
using the file (each `serve --workers` worker) maps. With the rollback journal and mmap off, SQLite only
read()s and write()s its files: a truncated, immutable or read-only file, a full disk or a lock held
elsewhere is an error its owner handles (the routing log counts a failed batch, the embedding cache
embeds instead), never a signal. The cost: a write waits for the file's readers instead of running
beside them, and each commit syncs the journal (about 20 ms here, on a background thread).
"""

from __future__ import annotations

import fcntl
import sqlite3
import time
from pathlib import Path
from typing import Any


def no_memory_maps(conn: Any) -> None:
    """Set up a new connection (sqlite3's, or the DB-API one SQLAlchemy hands its connect event): mmap off,
    rollback journal. A file an older version left in WAL mode is switched back; another process holding it
    open in WAL mode at that moment makes this raise, and the owner's open fails or is retried."""
    cur = conn.cursor()
    try:
        cur.execute("PRAGMA mmap_size=0")  # the default of most builds, but a build may map the main file
        mode = cur.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
        if str(mode).lower() != "delete":
            raise sqlite3.OperationalError(f"the file stays in journal_mode {mode}")
    finally:
        cur.close()


_CORRUPT, _NOT_A_DATABASE = 11, 26  # SQLite's primary result codes for a file it cannot read as a database


def is_damaged(exc: BaseException) -> bool:
    """Whether `exc` (sqlite3's, or SQLAlchemy's wrapper of it) says the file is damaged: corrupt pages or
    not a database at all. Such a file stays damaged: retrying on it never succeeds."""
    cause = getattr(exc, "orig", exc)
    code = getattr(cause, "sqlite_errorcode", 0) & 0xFF
    return isinstance(cause, sqlite3.DatabaseError) and code in (_CORRUPT, _NOT_A_DATABASE)


def set_aside_if_damaged(path: Path) -> Path | None:
    """Rename a damaged database file (and its journal, which belongs to it and must never be replayed into a
    new file) to `<name>.damaged-<UTC time>`, so the owner starts a fresh file in its place; returns the new
    name. None when a fresh connection finds the file sound: a process sharing it (a `--workers` sibling)
    set the damaged one aside first, and the caller only has to reconnect. Processes sharing the file take
    turns on a lock file beside it, so only one of them renames."""
    try:
        with path.with_name(path.name + ".lock").open("a") as turn:
            fcntl.flock(turn, fcntl.LOCK_EX)
            if not path.exists() or _sound(path):
                return None
            aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
            while aside.exists():
                aside = aside.with_name(aside.name + "+")
            journal = path.with_name(path.name + "-journal")
            if journal.exists():
                journal.rename(aside.with_name(aside.name + "-journal"))
            path.rename(aside)
            return aside
    except OSError:  # the folder refuses writes too: nothing to do until it is writable again
        return None


def _sound(path: Path) -> bool:
    """Whether a new connection reads `path` as a sound database; an error that is not damage (a lock, an
    I/O fault) counts as sound: only a file known to be damaged is set aside."""
    try:
        conn = sqlite3.connect(path, timeout=5)
    except sqlite3.Error:
        return True
    try:
        no_memory_maps(conn)
        return conn.execute("PRAGMA quick_check(1)").fetchone()[0] == "ok"
    except sqlite3.Error as exc:
        return not is_damaged(exc)
    finally:
        conn.close()
