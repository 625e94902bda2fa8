"""SQL adapter over SQLAlchemy (SQLite, PostgreSQL, MySQL/MariaDB): named binds, row cap, timeout.

Per dialect: the read-only guard is re-checked with the server's SQL dialect at start (plus a list of
functions that reach outside the query: files, sleeps, locks, admin); every pooled connection is put
in read-only transaction mode with a server-side statement timeout; the row cap is enforced by the
server where it can be (MySQL's sql_select_limit) and by streaming otherwise (PostgreSQL cursors).
Driver errors become 503 (source down), 504 (timeout) or 502 (query failed), never driver text.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
from collections.abc import Iterator
from typing import Any, ClassVar

import sqlglot
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlglot import exp

from ..api.health import Health
from ..bulkhead import HEALTH_POOL, run_on
from ..config.errors import ConfigError, ConfigIssue
from ..config.parse_cache import remembered
from ..config.parsed_body import ParsedBody
from ..errors import QueryFailed, SourceTimeout, SourceUnavailable
from ..templates import Template
from .accepted_bodies import file_identity
from .base import Counting, DataAdapter, DataAdapterSettings, QueryResult
from .file_identity import REASONS, FileIdentity, FollowsFile
from .like_escape import add_escape_clauses, escaped_params, pattern_issues
from .own_limit import counting_query, limited_query
from .row_values import to_json_value
from .source_check import SourceCheck, check_in_thread
from .sql_guard import function_names, parse_sql_body
from .sql_prepare import refused_templates

log = logging.getLogger("intent_router.adapters.sql")

_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}

# Functions that read files, sleep, take locks or act on the server: never in a template.
_FORBIDDEN_FUNCTIONS = {
    "postgres": {
        "pg_sleep",
        "pg_sleep_for",
        "pg_sleep_until",
        "pg_read_file",
        "pg_read_binary_file",
        "pg_ls_dir",
        "pg_stat_file",
        "lo_import",
        "lo_export",
        "lo_get",
        "dblink",
        "dblink_exec",
        "pg_terminate_backend",
        "pg_cancel_backend",
        "pg_reload_conf",
        "set_config",
        "pg_advisory_lock",
        "pg_advisory_xact_lock",
        "pg_try_advisory_lock",
        "nextval",
        "setval",
        "txid_current",
        "pg_notify",
        "query_to_xml",
    },
    "mysql": {
        "sleep",
        "benchmark",
        "load_file",
        "get_lock",
        "release_lock",
        "release_all_locks",
        "is_free_lock",
        "master_pos_wait",
        "source_pos_wait",
        "sys_exec",
        "sys_eval",
    },
}
# Refused at load whatever the URL (template bodies are parsed as SQLite first): SQLite functions that load
# native code or touch files (the sqlite3 shell's and common extensions'), and raw page access.
_ALWAYS_REFUSED = frozenset(
    {"load_extension", "readfile", "writefile", "edit", "fsdir", "zipfile", "sqlar_compress", "sqlar_uncompress"}
    | {"fts3_tokenizer", "sqlite_dbpage", "lsmode"}
)
# Error numbers / SQLSTATE classes by what they mean for a client.
_MYSQL_TIMEOUT = {1969, 3024, 1317}  # max_statement_time, max_execution_time, query interrupted
_PG_DOWN = {"28000", "28P01", "3D000"}  # authentication failed, no such database
_MYSQL_DOWN = {1040, 1045, 1049, 1053, 2002, 2003, 2005, 2006, 2013, 2055}
# SQLite primary result codes: 1 SQLITE_ERROR (no such table/column, syntax) means the query failed, the
# file is fine; these mean the database itself cannot be used (busy, locked, I/O, corrupt, cannot open...).
_SQLITE_DOWN = {3, 5, 6, 7, 10, 11, 13, 14, 15, 23, 26}
_SQLITE_INTERRUPT, _SQLITE_READONLY = 9, 8


class SQLConnection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(
        description="SQLAlchemy URL: sqlite:///, postgresql+psycopg://, mysql+pymysql:// (credentials with ${VAR})"
    )
    pool_size: int = Field(5, ge=1, le=100, description="connections kept in the pool")
    connect_timeout: float = Field(5.0, gt=0, description="seconds to connect")
    read_only: bool = Field(True, description="open SQLite read-only; read-only transactions where the dialect allows")


class SQLAdapterSettings(DataAdapterSettings):
    connection: SQLConnection = Field(description="the SQL database")


class SQLAdapter(FollowsFile, DataAdapter):
    type_name = "sql"
    settings_model = SQLAdapterSettings
    body_key: ClassVar[str] = "sql"
    runs_in_threads: ClassVar[bool] = True

    settings: SQLAdapterSettings

    @classmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        parsed = parse_sql_body(raw, "sqlite", _ALWAYS_REFUSED)  # re-checked with the URL's dialect by check_templates
        return ParsedBody(add_escape_clauses(parsed.value, "sqlite"), parsed.placeholders)

    def __init__(self, settings, context) -> None:
        super().__init__(settings, context)
        self._engine: Engine | None = None
        self._file: FileIdentity | None = None  # the SQLite file the pool reads
        self._reopen_lock = asyncio.Lock()

    @property
    def backend(self) -> str:
        return _backend(self.settings)

    @classmethod
    def check_templates(cls, settings: Any, templates: list[Template]) -> list[ConfigIssue]:
        """Bodies and values_from queries were parsed as SQLite at load; re-check them with the dialect of
        the URL."""
        dialect = _DIALECTS.get(_backend(settings))
        issues = [
            ConfigIssue(t.source_file or "templates", t.source_line, key, message)
            for t in templates
            for key, message in pattern_issues(t, dialect or "sqlite", [(f"templates[id={t.id}].sql", t.body)])
        ]
        if not dialect or dialect == "sqlite":
            return issues
        return issues + [issue for t in templates for issue in check_for_dialect(t, dialect)]

    async def start(self) -> None:
        issues = self.check_templates(self.settings, list(self.templates.values()))
        if issues:  # a runtime built without the loader (tests, tools) gets the same check
            raise ConfigError(issues)
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
                self._file = FileIdentity.of(path)
                mode = "ro" if conn.read_only else "rw"
                url = url.set(database=f"file:{path}?mode={mode}", query={"uri": "true"})
            connect_args["timeout"] = conn.connect_timeout
            connect_args["check_same_thread"] = False
        else:
            kwargs.update(pool_size=conn.pool_size, max_overflow=conn.pool_size, pool_recycle=1800)
            connect_args["connect_timeout"] = int(max(1, conn.connect_timeout))
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        if backend == "sqlite":
            event.listen(engine, "connect", _sqlite_query_only if conn.read_only else _noop)
        elif backend == "postgresql":
            event.listen(engine, "connect", self._postgres_session)
        elif backend in {"mysql", "mariadb"}:
            event.listen(engine, "connect", self._mysql_session)
        return engine

    def _postgres_session(self, dbapi_connection, _record) -> None:
        """Read-only transactions and a statement timeout for every pooled connection."""
        ms = int(self.settings.query_timeout * 1000)
        statements = [f"SET statement_timeout = {ms}"]
        if self.settings.connection.read_only:
            statements.append("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        _run_session_statements(dbapi_connection, statements)

    def _mysql_session(self, dbapi_connection, _record) -> None:
        """Read-only transactions, a server-side row cap and a statement timeout (MariaDB or MySQL)."""
        seconds = self.settings.query_timeout
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT VERSION()")
            is_mariadb = "mariadb" in str(cursor.fetchone()[0]).lower()
        statements = [
            f"SET SESSION sql_select_limit = {int(self.settings.max_rows) + 1}",
            f"SET SESSION max_statement_time = {seconds:.3f}"
            if is_mariadb
            else f"SET SESSION max_execution_time = {int(seconds * 1000)}",
        ]
        if self.settings.connection.read_only:
            statements.append("SET SESSION TRANSACTION READ ONLY")
        _run_session_statements(dbapi_connection, statements)

    async def close_source(self) -> None:
        if self._engine is not None:
            await asyncio.to_thread(self._engine.dispose)
            self._engine = None

    async def source_health(self) -> dict[str, Any]:
        if (down := self.file_down()) is not None:
            return down
        try:
            await asyncio.wait_for(run_on(HEALTH_POOL, self._ping), self.settings.connection.connect_timeout)
            return {"status": Health.OK}
        except Exception as exc:
            return {"status": Health.DOWN, "reason": _safe_reason(exc)}

    async def _follow_file(self, problem: str) -> None:
        """A missing SQLite file is a source that is down (no stale answers from the deleted inode); a
        replaced one is opened again, so queries read what is on disk now."""
        if problem == "missing":
            raise SourceUnavailable(self.name, REASONS[problem])
        async with self._reopen_lock:
            if self._file is None or self._file.problem() != "replaced":
                return  # another request reopened it meanwhile
            log.warning("sql adapter %s: %s; reopening the pool", self.name, REASONS[problem])
            old, self._engine = self._engine, await asyncio.to_thread(self._create_engine)
            if old is not None:
                await asyncio.to_thread(old.dispose)
            await self.forget_cached()

    async def check_against_source(self) -> SourceCheck:
        """Each body planned (EXPLAIN) or prepared by the database itself, with NULL binds (sql_prepare.py)."""
        templates = list(self.templates.values())
        engine, down = self._engine, self.file_down()
        if engine is None or down is not None:
            return SourceCheck.unchecked(self.name, len(templates), down["reason"] if down else "not started")
        timeout = self.settings.connection.connect_timeout + self.settings.query_timeout
        ask = functools.partial(refused_templates, engine, self.backend, classify=classify_error)
        label, accepted, identity = (
            f"{self.name} ({self.backend})",
            self.context.accepted_bodies,
            self.source_identity(),
        )
        return await check_in_thread(self.name, label, "sql", templates, ask, timeout, accepted, identity)

    def source_identity(self) -> str | None:
        """A SQLite file: SQLite's version, the connection settings and the file as it is now (with its WAL).
        None for a server database (it can change at any time) and for SQLite in memory."""
        if self._file is None:
            return None
        where = file_identity(self._file.path)
        if where is None:
            return None
        return f"sqlite {sqlite3.sqlite_version}|{self.settings.connection.model_dump_json()}|{where}"

    def _ping(self) -> None:
        assert self._engine is not None
        with self._engine.connect() as conn:
            # SQLite opens a file without reading it: its first page tells a database from anything else
            conn.execute(text("SELECT count(*) FROM sqlite_master" if self.backend == "sqlite" else "SELECT 1"))

    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        if self._engine is None:
            raise SourceUnavailable(self.name, "adapter is not started")
        await self.check_source()
        timeout = self.query_timeout
        holder: dict[str, Any] = {}
        params = escaped_params(template, params, "sqlite")  # bodies are tokenised as SQLite at load
        sql, row_cap = template.body, self.row_cap(max_rows)
        cap = row_cap
        if self.answering(max_rows):  # the template's own LIMIT asks for one row more (own_limit.py)
            query = limited_query(sql, params, "sqlite", row_cap)
            sql, params, cap = query.sql, query.params, query.cap
        task = await self.bulkhead.thread(self._run, sql, params, holder, cap, row_cap)  # 503 source_busy when full
        try:
            async with asyncio.timeout(timeout):  # not wait_for: 3.11 wait_for can swallow the request cancel
                return await task
        except TimeoutError:
            _interrupt(holder)
            raise SourceTimeout(self.name, timeout) from None
        except (DBAPIError, SQLAlchemyError) as exc:
            kind = classify_error(exc, self.backend)
            log.warning("sql adapter %s template %s (%s): %s", self.name, template.id, kind, _driver_text(exc))
            if kind == "timeout":
                raise SourceTimeout(self.name, timeout) from None
            transient = is_transient_error(exc, self.backend)
            if kind == "down":
                raise SourceUnavailable(self.name, _safe_reason(exc), transient=transient) from None
            if kind == "read_only":
                raise QueryFailed(
                    self.name, f"template '{template.id}' tried to write; the source is read-only"
                ) from None
            raise QueryFailed(self.name, f"template '{template.id}' failed to run", transient=transient) from None

    def counting(self, template: Template, params: dict[str, Any], defaults: frozenset[str]) -> Counting | None:
        if self.backend in {"mysql", "mariadb"} and _repeats_a_column(template.body):
            return None  # MariaDB refuses a subquery whose columns share a name ("SELECT a.n, b.n ...")
        query = counting_query(template.body, "sqlite", defaults)  # tokenised as SQLite, as execute does
        return None if query is None else Counting.of(template, query.sql, params, query.lifted)

    def _run(self, sql: str, params: dict[str, Any], holder: dict[str, Any], cap: int, row_cap: int) -> QueryResult:
        """At most `cap` rows (the template's own LIMIT when smaller than `row_cap`), fetching one more to know
        whether there were more."""
        assert self._engine is not None
        with self._engine.connect() as conn:
            holder["dbapi"] = conn.connection.dbapi_connection
            if self.backend == "postgresql":  # a server-side cursor: only cap + 1 rows ever cross the wire
                conn = conn.execution_options(stream_results=True, max_row_buffer=cap + 1)
            with self._select_limit(conn, row_cap):
                result = conn.execute(text(sql), params)
                columns = list(result.keys())
                fetched = result.fetchmany(cap + 1)
                result.close()
            conn.rollback()
        rows = [{c: to_json_value(v) for c, v in zip(columns, row, strict=True)} for row in fetched[:cap]]
        return QueryResult(rows=rows, columns=columns, truncated=len(fetched) > cap)

    @contextlib.contextmanager
    def _select_limit(self, conn: Connection, cap: int) -> Iterator[None]:
        """MySQL/MariaDB cap rows on the server with the session's sql_select_limit (max_rows + 1, set on
        every pooled connection): a query with another cap (a values_from list) moves it for itself and
        puts it back before the connection returns to the pool."""
        if self.backend not in {"mysql", "mariadb"} or cap == self.settings.max_rows:
            yield
            return
        conn.exec_driver_sql(f"SET SESSION sql_select_limit = {int(cap) + 1}")
        try:
            yield
        finally:
            conn.exec_driver_sql(f"SET SESSION sql_select_limit = {int(self.settings.max_rows) + 1}")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": self.backend}


@functools.lru_cache(maxsize=5_000)
def _repeats_a_column(sql: str) -> bool:
    """True when two of the body's output columns have the same name (or it cannot be read to tell)."""
    try:
        parsed = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return True
    if not isinstance(parsed, exp.Query):
        return True
    names = parsed.named_selects
    return len(names) != len(set(names))


def _backend(settings: SQLAdapterSettings) -> str:
    """sqlite, postgresql, mysql, ... from the connection URL."""
    return make_url(settings.connection.url).get_backend_name()


def _sqlite_query_only(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA query_only = ON")


def _noop(*_args) -> None:
    return None


def check_for_dialect(template: Template, dialect: str) -> list[ConfigIssue]:
    """Re-check a template's SQL body and its values_from queries with the server's dialect."""
    file, line, at = template.source_file or "templates", template.source_line, f"templates[id={template.id}]"
    queries = [(f"{at}.sql", template.body)] + [
        (f"{at}.parameters[{i}].values_from.query", p.values_from.query)
        for i, p in enumerate(template.parameters)
        if p.values_from is not None
    ]
    return [
        ConfigIssue(file, line, key, problem) for key, sql in queries if (problem := sql_dialect_problem(sql, dialect))
    ]


@remembered("sql.sql_dialect_problem/1")
def sql_dialect_problem(sql: str, dialect: str) -> str | None:
    """Why this SQL may not run on this dialect (the read-only guard, forbidden functions, locks), or None."""
    try:
        parse_sql_body(sql, dialect)
    except ValueError as exc:
        return f"{exc} (checked as {dialect} SQL)"
    tree = sqlglot.parse_one(sql, read=dialect)
    forbidden = _ALWAYS_REFUSED | _FORBIDDEN_FUNCTIONS.get(dialect, set())
    for name in function_names(tree):
        if name in forbidden:
            return f"function {name}() is not allowed in a template"
    if any(True for _ in tree.find_all(exp.Lock)):
        return "locking clauses (FOR UPDATE / FOR SHARE) are not allowed in a template"
    return None


def _run_session_statements(dbapi_connection, statements: list[str]) -> None:
    cursor = dbapi_connection.cursor()
    try:
        for statement in statements:
            cursor.execute(statement)
    finally:
        cursor.close()
    dbapi_connection.commit()


def classify_error(exc: BaseException, backend: str) -> str:
    """'timeout' | 'down' | 'read_only' | 'failed' from the driver's error code (never its text)."""
    orig = getattr(exc, "orig", None)
    sqlstate = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)
    if backend == "postgresql":
        if sqlstate == "57014":
            return "timeout"
        if sqlstate == "25006":
            return "read_only"
        if sqlstate is not None and (sqlstate.startswith(("08", "57P", "53")) or sqlstate in _PG_DOWN):
            return "down"
        return "down" if sqlstate is None and isinstance(exc, OperationalError) else "failed"
    if backend in {"mysql", "mariadb"}:
        errno = orig.args[0] if orig is not None and orig.args and isinstance(orig.args[0], int) else None
        if errno in _MYSQL_TIMEOUT:
            return "timeout"
        if errno == 1792:
            return "read_only"
        if errno in _MYSQL_DOWN or (errno is None and isinstance(exc, OperationalError)):
            return "down"
        return "failed"
    code = getattr(orig, "sqlite_errorcode", None)
    if backend == "sqlite" and isinstance(code, int):
        primary = code & 0xFF  # extended codes carry the primary one in the low byte
        if primary == _SQLITE_INTERRUPT:
            return "timeout"
        if primary == _SQLITE_READONLY:
            return "read_only"
        return "down" if primary in _SQLITE_DOWN else "failed"
    return "down" if isinstance(exc, OperationalError) else "failed"


# Worth another attempt (server/resilience.py retries them): the connection was reset or refused
# for the moment, the server is restarting or shedding load, or the transaction lost a deadlock or a
# serialization conflict. Authentication, unknown database, syntax and permission errors are not.
_PG_TRANSIENT = {"40001", "40P01", "55P03", "57P01", "57P02", "57P03", "53300"}
_MYSQL_TRANSIENT = {1040, 1053, 1205, 1213, 2002, 2003, 2006, 2013, 2055}
_SQLITE_TRANSIENT = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED (primary result codes)


def is_transient_error(exc: BaseException, backend: str) -> bool:
    """True when the same query may well succeed on a fresh attempt (from codes, never from text)."""
    orig = getattr(exc, "orig", None)
    if backend == "postgresql":
        sqlstate = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)
        if sqlstate is None:  # the connection broke before the server could say why
            return isinstance(exc, OperationalError)
        return sqlstate in _PG_TRANSIENT or sqlstate.startswith("08")
    if backend in {"mysql", "mariadb"}:
        errno = orig.args[0] if orig is not None and orig.args and isinstance(orig.args[0], int) else None
        return errno in _MYSQL_TRANSIENT
    code = getattr(orig, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in _SQLITE_TRANSIENT


def _interrupt(holder: dict[str, Any]) -> None:
    dbapi = holder.get("dbapi")
    interrupt = getattr(dbapi, "interrupt", None)  # sqlite3 can abort a running statement
    if interrupt is not None:
        with contextlib.suppress(Exception):  # best effort: the connection may already be gone
            interrupt()


def _driver_text(exc: BaseException) -> str:
    """The driver's own message for the log, without SQLAlchemy's additions: the statement and the bound
    values (a question's values are personal data, kept only where `store_queries` says) and a link."""
    orig = getattr(exc, "orig", None)
    return f"{type(orig).__name__}: {orig}" if orig is not None else type(exc).__name__


def _safe_reason(exc: BaseException) -> str:
    """A reason without driver text: the exception class family only."""
    if isinstance(exc, TimeoutError):
        return "connection timed out"
    if isinstance(exc, OperationalError):
        return "cannot connect to the database"
    return "database error"
