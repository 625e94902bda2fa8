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

import sqlite3
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
