"""SQL adapter over SQLAlchemy (SQLite, PostgreSQL, MySQL/MariaDB): named binds, row cap, timeout."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import decimal
import logging
import uuid
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

from ..errors import QueryFailed, SourceTimeout, SourceUnavailable
from ..templates import Template
from ..templates.library import ParsedBody
from .base import Adapter, DataAdapterSettings, QueryResult
from .sql_guard import parse_sql_body

log = logging.getLogger("intent_router.adapters.sql")

_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}


class SQLConnection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    pool_size: int = Field(5, ge=1, le=100)
    connect_timeout: float = Field(5.0, gt=0)
    read_only: bool = True  # open SQLite read-only / set read-only transactions where the dialect allows


class SQLAdapterSettings(DataAdapterSettings):
    connection: SQLConnection


class SQLAdapter(Adapter):
    type_name = "sql"
    settings_model = SQLAdapterSettings
    body_key: ClassVar[str] = "sql"

    settings: SQLAdapterSettings

    @classmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        return parse_sql_body(raw, "sqlite")  # dialect re-checked against the URL at start()

    def __init__(self, settings, context) -> None:
        super().__init__(settings, context)
        self._engine: Engine | None = None

    @property
    def backend(self) -> str:
        return make_url(self.settings.connection.url).get_backend_name()

    async def start(self) -> None:
        dialect = _DIALECTS.get(self.backend)
        if dialect and dialect != "sqlite":
            for template in self.templates.values():
                parse_sql_body(template.body, dialect)
        self._engine = await asyncio.to_thread(self._create_engine)

    def _create_engine(self) -> Engine:
        conn = self.settings.connection
        url = make_url(conn.url)
        kwargs: dict[str, Any] = {"pool_pre_ping": True}
        connect_args: dict[str, Any] = {}
        backend = url.get_backend_name()
        if backend == "sqlite":
            database = url.database or ""
            if database and database != ":memory:" and not database.startswith("file:"):
                from pathlib import Path

                path = Path(database)
                if not path.is_absolute():
                    path = self.context.root / path
                mode = "ro" if conn.read_only else "rw"
                url = url.set(database=f"file:{path}?mode={mode}", query={"uri": "true"})
            connect_args["timeout"] = conn.connect_timeout
            connect_args["check_same_thread"] = False
        else:
            kwargs.update(pool_size=conn.pool_size, max_overflow=conn.pool_size)
            connect_args["connect_timeout"] = int(max(1, conn.connect_timeout))
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        if backend == "sqlite":
            event.listen(engine, "connect", _sqlite_query_only if conn.read_only else _noop)
        return engine

    async def close(self) -> None:
        if self._engine is not None:
            await asyncio.to_thread(self._engine.dispose)
            self._engine = None

    async def health(self) -> dict[str, Any]:
        try:
            await asyncio.wait_for(asyncio.to_thread(self._ping), self.settings.connection.connect_timeout)
            return {"status": "ok"}
        except Exception as exc:
            return {"status": "down", "reason": _safe_reason(exc)}

    def _ping(self) -> None:
        assert self._engine is not None
        with self._engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    async def execute(self, template: Template, params: dict[str, Any]) -> QueryResult:
        if self._engine is None:
            raise SourceUnavailable(self.name, "adapter is not started")
        timeout = self.settings.query_timeout
        holder: dict[str, Any] = {}
        task = asyncio.to_thread(self._run, template.body, params, holder)
        try:
            return await asyncio.wait_for(task, timeout)
        except TimeoutError:
            _interrupt(holder)
            raise SourceTimeout(self.name, timeout) from None
        except OperationalError as exc:
            log.warning("sql adapter %s: %s", self.name, exc)
            raise SourceUnavailable(self.name, _safe_reason(exc)) from None
        except (DBAPIError, SQLAlchemyError) as exc:
            log.warning("sql adapter %s query %s failed: %s", self.name, template.id, exc)
            raise QueryFailed(self.name, f"template '{template.id}' failed to run") from None

    def _run(self, sql: str, params: dict[str, Any], holder: dict[str, Any]) -> QueryResult:
        assert self._engine is not None
        cap = self.settings.max_rows
        with self._engine.connect() as conn:
            holder["dbapi"] = conn.connection.dbapi_connection
            if self.backend == "postgresql":
                ms = int(self.settings.query_timeout * 1000)
                conn.exec_driver_sql(f"SET statement_timeout = {ms}")
                if self.settings.connection.read_only:
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            result = conn.execute(text(sql), params)
            columns = list(result.keys())
            fetched = result.fetchmany(cap + 1)
            conn.rollback()
        rows = [{c: to_json_value(v) for c, v in zip(columns, row, strict=True)} for row in fetched[:cap]]
        return QueryResult(rows=rows, columns=columns, truncated=len(fetched) > cap)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": self.backend}


def _sqlite_query_only(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA query_only = ON")


def _noop(*_args) -> None:
    return None


def _interrupt(holder: dict[str, Any]) -> None:
    dbapi = holder.get("dbapi")
    interrupt = getattr(dbapi, "interrupt", None)  # sqlite3 can abort a running statement
    if interrupt is not None:
        with contextlib.suppress(Exception):  # best effort: the connection may already be gone
            interrupt()


def _safe_reason(exc: BaseException) -> str:
    """A reason without driver text: the exception class family only."""
    if isinstance(exc, TimeoutError):
        return "connection timed out"
    if isinstance(exc, OperationalError):
        return "cannot connect to the database"
    return "database error"


def to_json_value(value: Any) -> Any:
    """Driver types (Decimal, dates, UUIDs, bytes) as plain JSON values."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2**53 else float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    return str(value)
