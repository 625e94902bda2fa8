"""The cluster bus on the routing log's PostgreSQL database: LISTEN/NOTIFY for announcements, a one-row
table for the latest, a table of heartbeats (rows older than their TTL are not listed and are pruned)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from .bus import Announcement, BusUnavailable, ClusterBus

CONNECT_TIMEOUT = 2  # seconds: a down database must not stall a loop for long


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL (postgresql+psycopg://...) as psycopg connects to it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresBus(ClusterBus):
    backend = "postgres"

    def __init__(self, url: str, log_table: str) -> None:
        self._url = libpq_url(url)
        self._channel = f"{log_table}_cluster"
        self._replicas = sql.Identifier(f"{log_table}_replicas")
        self._latest = sql.Identifier(f"{log_table}_cluster")
        self._conn: psycopg.AsyncConnection | None = None
        self._ready = False

    async def _connection(self) -> psycopg.AsyncConnection:
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT
            )
            self._ready = False
        if not self._ready:
            for statement in (
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (instance TEXT PRIMARY KEY, record TEXT NOT NULL, "
                    "expires_at DOUBLE PRECISION NOT NULL)"
                ).format(self._replicas),
                sql.SQL("CREATE TABLE IF NOT EXISTS {} (id INTEGER PRIMARY KEY, announcement TEXT NOT NULL)").format(
                    self._latest
                ),
            ):
                # another replica may create it at the same moment (IF NOT EXISTS is not atomic)
                with contextlib.suppress(psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
                    await self._conn.execute(statement)
            self._ready = True
        return self._conn

    async def _run(self, query: sql.SQL | sql.Composed, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            conn = await self._connection()
            cur = await conn.execute(query, params)
            return await cur.fetchall() if cur.description else []
        except (psycopg.Error, OSError) as exc:
            await self._drop()
            raise BusUnavailable(f"postgres: {type(exc).__name__}") from None

    async def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error, OSError):
                await self._conn.close()
            self._conn = None

    async def announce(self, announcement: Announcement) -> None:
        text = announcement.to_text()
        await self._run(
            sql.SQL(
                "INSERT INTO {} (id, announcement) VALUES (1, %s) "
                "ON CONFLICT (id) DO UPDATE SET announcement = EXCLUDED.announcement"
            ).format(self._latest),
            (text,),
        )
        await self._run(sql.SQL("SELECT pg_notify(%s, %s)"), (self._channel, text))

    async def latest(self) -> Announcement | None:
        rows = await self._run(sql.SQL("SELECT announcement FROM {} WHERE id = 1").format(self._latest))
        return Announcement.from_text(rows[0][0]) if rows else None

    async def announcements(self) -> AsyncIterator[Announcement]:
        try:
            conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except (psycopg.Error, OSError) as exc:
            raise BusUnavailable(f"postgres: {type(exc).__name__}") from None
        try:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
            while True:
                async for notify in conn.notifies(timeout=1.0):
                    announcement = Announcement.from_text(notify.payload)
                    if announcement is not None:
                        yield announcement
                await conn.execute("SELECT 1")  # notices a dead server between notifications
        except (psycopg.Error, OSError) as exc:
            raise BusUnavailable(f"postgres: {type(exc).__name__}") from None
        finally:
            with contextlib.suppress(psycopg.Error, OSError):
                await conn.close()

    async def beat(self, instance: str, record: dict[str, Any], ttl_seconds: float) -> None:
        now = time.time()
        await self._run(
            sql.SQL(
                "INSERT INTO {} (instance, record, expires_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (instance) DO UPDATE SET record = EXCLUDED.record, expires_at = EXCLUDED.expires_at"
            ).format(self._replicas),
            (instance, json.dumps(record), now + ttl_seconds),
        )
        await self._run(sql.SQL("DELETE FROM {} WHERE expires_at < %s").format(self._replicas), (now - 3600,))

    async def replicas(self) -> list[dict[str, Any]]:
        rows = await self._run(
            sql.SQL("SELECT record FROM {} WHERE expires_at >= %s ORDER BY instance").format(self._replicas),
            (time.time(),),
        )
        found = []
        for (text,) in rows:
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, dict):
                found.append(record)
        return found

    async def close(self) -> None:
        await self._drop()
