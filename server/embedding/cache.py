"""Persistent embedding cache: a restart or a reload re-embeds only texts it has never seen.

Rows are keyed by (model_id, sha256(text)) in SQLite and hold float32 bytes; an LRU bounded in bytes
(`memory_max_bytes`: vectors of a 3072-d model weigh eight times a MiniLM one) sits in front so that
repeated questions never touch the disk. Template texts (`embed`, `embed_sync`) pass through it only when
nothing persists them: their vectors live in the file and in the template stores, and a third copy in memory
cost a deployment of 1,000 templates about 1.7 KB per example. Optionally a cache shared by every
replica (Redis, shared_cache.py) sits behind the file: what the file lacks is looked up there (and
copied into the file), and what is embedded is written to both. Only the misses of a batch are sent
to the wrapped embedder, in one call.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from server.embedding.base import Embedder, TokenViews, check_texts, empty

from ..bulkhead import SEARCH_POOL, run_on
from ..local_sqlite import no_memory_maps
from ..recent import Recent, slot_bytes
from .settings import MEMORY_BYTES
from .shared_cache import SharedEmbeddings

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    used_at REAL NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
);
CREATE INDEX IF NOT EXISTS embeddings_used_at ON embeddings (used_at);
"""
_LOOKUP_CHUNK = 500  # stays below SQLite's bound-parameter limit
USED_AT_RESOLUTION = 3600.0  # seconds: a hit refreshes a row's used_at only when it is older than this


@dataclass
class CacheStats:
    """Counts per text: `hits` + `misses` = texts asked for; `computed` = texts the provider embedded;
    hits = memory_hits + disk_hits + shared_hits."""

    hits: int = 0
    misses: int = 0
    computed: int = 0
    memory_hits: int = 0
    disk_hits: int = 0
    shared_hits: int = 0  # found in the cache shared by the replicas (not in memory nor in the file)


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def vector_bytes(key: bytes, vector: np.ndarray) -> int:
    """What one vector kept in memory holds: the array (it owns its data, see `_remember`), its key and slot."""
    return sys.getsizeof(vector) + slot_bytes(key)


class _DiskCache:
    """The SQLite side. One connection shared by threads under a lock; processes share the file through
    SQLite's locks, and none maps it (local_sqlite.py: a fault in the file is a failed read or write)."""

    def __init__(self, path: Path, max_entries: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=10.0, isolation_level=None)
        no_memory_maps(self._db)
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()
        self._max_entries = max_entries
        self._count = self._db.execute("SELECT count(*) FROM embeddings").fetchone()[0]

    def get(self, model_id: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """Stored vectors by key. Use is recorded to the hour only: rewriting every row's `used_at` on every
        start cost a warm start of 15,000 texts about a second, and pruning needs no finer order."""
        found: dict[bytes, np.ndarray] = {}
        touched: list[bytes] = []
        now = time.time()
        stale = now - USED_AT_RESOLUTION
        with self._lock:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    "SELECT text_sha256, dim, vector, used_at FROM embeddings"
                    f" WHERE model_id = ? AND text_sha256 IN ({marks})",
                    [model_id, *chunk],
                ).fetchall()
                for key, dim, blob, used_at in rows:
                    if len(blob) == dim * 4:
                        found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
                        if used_at < stale:
                            touched.append(bytes(key))
            if touched:  # remember use so that pruning drops what nobody asks for any more
                with self._transaction():  # one commit: each row's own cost 19 ms of fsync here (20,000: minutes)
                    self._db.executemany(
                        "UPDATE embeddings SET used_at = ? WHERE model_id = ? AND text_sha256 = ?",
                        [(now, model_id, k) for k in touched],
                    )
        return found

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One explicit transaction (the connection commits every statement on its own otherwise)."""
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def put(self, model_id: str, items: list[tuple[bytes, np.ndarray]]) -> None:
        now = time.time()
        rows = [
            (model_id, k, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes(), now) for k, v in items
        ]
        with self._lock:
            with self._transaction():
                self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)
            self._count += len(rows)
            if self._count > self._max_entries:
                self._prune()

    def _prune(self) -> None:
        """Drop the least recently used rows down to 90% of the bound."""
        self._count = self._db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        excess = self._count - int(self._max_entries * 0.9)
        if excess > 0 and self._count > self._max_entries:
            self._db.execute(
                "DELETE FROM embeddings WHERE rowid IN (SELECT rowid FROM embeddings ORDER BY used_at LIMIT ?)",
                (excess,),
            )
            self._count -= excess
            log.info("embedding cache pruned %d least recently used rows", excess)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedEmbedder(Embedder):
    """Wraps an embedder with a memory LRU, an optional SQLite file and an optional shared cache; same
    interface, same vectors.

    A cache file that cannot be opened or written degrades to memory only, with a warning, and a shared
    cache that does not answer is skipped: the cache saves work, it must never take the service down.
    """

    def __init__(
        self,
        inner: Embedder,
        path: Path | None,
        memory_bytes: int = MEMORY_BYTES,
        max_disk_entries: int = 200_000,
        shared: SharedEmbeddings | None = None,
    ) -> None:
        self.inner = inner
        self.shared = shared
        self.model_id = inner.model_id
        self.stats = CacheStats()
        # touched by the loop and worker threads; bounded in bytes alone (the count bound is not the limit)
        self._memory: Recent[bytes, np.ndarray] = Recent(sys.maxsize, memory_bytes, vector_bytes)
        self._seen_dim = 0
        self._disk: _DiskCache | None = None
        if path is not None:
            try:
                self._disk = _DiskCache(path, max_disk_entries)
            except (sqlite3.Error, OSError) as exc:
                log.warning("embedding cache %s unavailable (%s); caching in memory only", path, exc)

    @property
    def dim(self) -> int:  # type: ignore[override]
        """The provider's dimension, or the cached vectors' when a remote provider was never called."""
        return self.inner.dim or self._seen_dim

    @property
    def persistent(self) -> bool:
        return self._disk is not None

    @property
    def supports_token_views(self) -> bool:  # type: ignore[override]
        return self.inner.supports_token_views

    def token_views_sync(self, texts: Sequence[str]) -> list[TokenViews]:
        """Not cached: token states are large, and the provider keeps the last questions' own."""
        return self.inner.token_views_sync(texts)

    async def token_views(self, texts: Sequence[str]) -> list[TokenViews]:
        return await self.inner.token_views(texts)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return empty(self.dim)
        keys = [text_key(t) for t in texts]
        found = self._from_memory(keys)
        wanted = self._missing(keys, found)
        if wanted and self._stored:
            found.update(await run_on(SEARCH_POOL, self._from_storage, list(wanted)))
        todo = self._count_and_todo(texts, keys, found)
        if todo:
            vectors = await self.inner.embed(list(todo.values()))
            await run_on(SEARCH_POOL, self._store, list(todo), vectors, found)
        return np.stack([found[k] for k in keys])

    async def embed_query(self, text: str) -> np.ndarray:
        """The request path: memory LRU only. Questions are mostly one-offs, so a disk read and a
        committed write per question would cost more than they save (and keep every question's
        vector on disk); repeated questions still hit the memory LRU."""
        [text] = check_texts([text])
        key = text_key(text)
        found = self._from_memory([key])
        if key not in found:
            self.stats.misses += 1
            vector = np.asarray(await self.inner.embed_query(text), dtype=np.float32)
            self.stats.computed += 1
            self._remember(key, vector)
            return vector
        self.stats.hits += 1
        return found[key]

    async def embed_questions(self, texts: Sequence[str]) -> np.ndarray:
        """Like `embed_query` for each (memory LRU only, nothing written to disk), in batched calls."""
        texts = check_texts(texts)
        if not texts:
            return empty(self.dim)
        keys = [text_key(t) for t in texts]
        found = self._from_memory(keys)
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        self.stats.hits += len(keys) - sum(1 for k in keys if k in todo)
        self.stats.misses += sum(1 for k in keys if k in todo)
        if todo:
            vectors = np.asarray(await self.inner.embed_questions(list(todo.values())), dtype=np.float32)
            self.stats.computed += len(todo)
            for key, vector in zip(todo, vectors, strict=True):
                self._remember(key, vector)
                found[key] = vector
        return np.stack([found[k] for k in keys])

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return empty(self.dim)
        keys = [text_key(t) for t in texts]
        found = self._from_memory(keys)
        wanted = self._missing(keys, found)
        if wanted and self._stored:
            found.update(self._from_storage(list(wanted)))
        todo = self._count_and_todo(texts, keys, found)
        if todo:
            self._store(list(todo), self.inner.embed_sync(list(todo.values())), found)
        return np.stack([found[k] for k in keys])

    async def close(self) -> None:
        if self._disk is not None:
            self._disk.close()
            self._disk = None
        if self.shared is not None:
            self.shared.close()
        await self.inner.close()

    # -- steps shared by the async and sync paths --

    def _from_memory(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found = self._memory.get_many(keys)
        self.stats.memory_hits += sum(1 for k in keys if k in found)
        return found

    @staticmethod
    def _missing(keys: list[bytes], found: dict[bytes, np.ndarray]) -> dict[bytes, None]:
        return dict.fromkeys(k for k in keys if k not in found)

    @property
    def _stored(self) -> bool:
        """Whether anything beyond the memory LRU may hold vectors."""
        return self._disk is not None or self.shared is not None

    def _from_storage(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """From the file, then what it lacks from the shared cache (copied into the file for the next start)."""
        found = self._from_disk(keys) if self._disk is not None else {}
        rest = [k for k in keys if k not in found]
        if found and self.shared is not None:
            self.shared.refresh(self.model_id, list(found.items()))
        if rest and self.shared is not None:
            shared = self.shared.get(self.model_id, rest, self.inner.dim or self._seen_dim)
            self.stats.shared_hits += len(shared)
            for k, v in shared.items():
                self._keep_template(k, v)
            found.update(shared)
            self._write_disk(list(shared.items()))
        return found

    def _from_disk(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        assert self._disk is not None
        try:
            rows = self._disk.get(self.model_id, keys)
        except sqlite3.Error as exc:
            log.warning("embedding cache read failed (%s); embedding instead", exc)
            return {}
        dim = self.inner.dim or self._seen_dim
        rows = {k: v for k, v in rows.items() if not dim or v.shape[0] == dim}
        for k, v in rows.items():
            self._keep_template(k, v)
        return rows

    def _count_and_todo(self, texts: list[str], keys: list[bytes], found: dict[bytes, np.ndarray]) -> dict[bytes, str]:
        """Update hit/miss counts and return the distinct texts that still need embedding."""
        todo: dict[bytes, str] = {}
        for text, k in zip(texts, keys, strict=True):
            if k in found:
                self.stats.hits += 1
            else:
                self.stats.misses += 1
                todo.setdefault(k, text)
        self.stats.disk_hits = self.stats.hits - self.stats.memory_hits - self.stats.shared_hits
        return todo

    def _store(self, keys: list[bytes], vectors: np.ndarray, found: dict[bytes, np.ndarray]) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        self.stats.computed += len(keys)
        items = [(k, vectors[i].copy()) for i, k in enumerate(keys)]
        for k, v in items:
            found[k] = v
            self._keep_template(k, v)
        self._write_disk(items)
        if self.shared is not None:
            self.shared.put(self.model_id, items)

    def _write_disk(self, items: list[tuple[bytes, np.ndarray]]) -> None:
        if self._disk is None or not items:
            return
        try:
            self._disk.put(self.model_id, items)
        except sqlite3.Error as exc:
            log.warning("embedding cache write failed (%s); continuing without persisting", exc)

    @property
    def memory_bytes(self) -> int:
        """The accounted bytes of the vectors kept in memory."""
        return self._memory.bytes

    @property
    def memory_max_bytes(self) -> int:
        return self._memory.max_bytes or 0

    @property
    def memory_entries(self) -> int:
        return len(self._memory)

    def _keep_template(self, key: bytes, vector: np.ndarray) -> None:
        """A template text's vector: into the memory LRU only when neither the file nor a shared cache
        keeps it (its readers, a reload's indexing and a refit, read the file then: once per change)."""
        if self._stored:
            self._seen_dim = int(vector.shape[0])
        else:
            self._remember(key, vector)

    def _remember(self, key: bytes, vector: np.ndarray) -> None:
        self._seen_dim = int(vector.shape[0])
        if not vector.flags.owndata:  # a row of a batch, or a view of a blob read from disk: it would keep
            vector = vector.copy()  # the whole batch or blob alive, unaccounted
        self._memory.put(key, vector)
