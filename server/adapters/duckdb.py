"""DuckDB adapter: a read-only database file, `:name` binds rewritten to DuckDB's `$name`.

DuckDB can read any file or URL the server can (read_csv('/etc/passwd'), FROM 'x.parquet', glob...).
So the database is opened with external access disabled and its configuration locked; an adapter that
needs files lists them in `connection.allowed_paths`, and only then may templates call file readers.
Without it, such templates are refused at load with file:line.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import sqlglot
from pydantic import BaseModel, ConfigDict, Field
from sqlglot.tokens import TokenType

from ..api.health import Health
from ..bulkhead import HEALTH_POOL, run_on
from ..config.errors import ConfigIssue
from ..config.parse_cache import remembered
from ..config.parsed_body import ParsedBody
from ..errors import QueryFailed, SourceTimeout, SourceUnavailable
from ..templates import Template
from . import duckdb_files
from .accepted_bodies import file_identity
from .base import Counting, DataAdapter, DataAdapterSettings, QueryResult
from .file_identity import REASONS, FileIdentity, FollowsFile
from .like_escape import add_escape_clauses, escaped_params, pattern_issues
from .own_limit import counting_query, limited_query
from .row_values import to_json_value
from .source_check import SourceCheck, SourceDown, check_in_thread, first_line, typed_nulls
from .sql_guard import function_names, parse_sql_body, path_like_tables

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger("intent_router.adapters.duckdb")
_CANNOT_OPEN = "cannot open the database"

# DuckDB exception classes that mean the database itself cannot be used (file unreadable or cut short,
# connection closed, instance invalidated, out of memory): the source is down (503), not the query (502).
_DOWN_ERRORS = ("IOException", "ConnectionException", "FatalException", "OutOfMemoryException")
# Never in a template: SQL held in a string escapes the guard; getenv reads the server's environment.
_ALWAYS_REFUSED = frozenset({"query", "query_table", "getenv"})
# Table and scalar functions that read files or URLs (and scanners of other databases' files).
_FILE_READERS = frozenset({"glob", "sniff_csv", "read_blob", "read_text", "load_aws_credentials"})
_FILE_READER_PREFIXES = ("read_", "parquet_", "iceberg_", "delta_", "st_read", "csv_")
_FILE_READER_SUFFIXES = ("_scan", "_attach", "_query", "_scan_pushdown")


class DuckDBConnection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="database file (relative to the project root), or `:memory:`")
    read_only: bool = Field(
        True, description="open the file read-only (a reload cannot change it for a file the server has open)"
    )
    threads: int = Field(
        2, ge=1, le=64, description="DuckDB's threads (a reload cannot change it for a file the server has open)"
    )
    # Files and directories (relative to the project root) templates may read with read_csv, read_parquet,
    # FROM 'file' ...; empty: no file or URL access at all besides the database itself.
    allowed_paths: list[str] = Field(
        default_factory=list,
        description="files and directories templates may read (read_csv, FROM 'file' ...); empty: no file or URL "
        "access besides the database",
    )


class DuckDBAdapterSettings(DataAdapterSettings):
    connection: DuckDBConnection = Field(description="the DuckDB database")


def to_duckdb_binds(sql: str) -> str:
    """Rewrite `:name` binds as `$name`, using the tokenizer so strings and `::casts` are untouched."""
    tokens = sqlglot.tokenize(sql, read="duckdb")
    out, last = [], 0
    for i, tok in enumerate(tokens[:-1]):
        nxt = tokens[i + 1]
        if tok.token_type == TokenType.COLON and nxt.start == tok.end + 1:
            out.append(sql[last : tok.start])
            out.append("$")
            last = tok.end + 1
    out.append(sql[last:])
    return "".join(out)


class DuckDBAdapter(FollowsFile, DataAdapter):
    type_name = "duckdb"
    settings_model = DuckDBAdapterSettings
    body_key: ClassVar[str] = "sql"
    runs_in_threads: ClassVar[bool] = True

    settings: DuckDBAdapterSettings

    @classmethod
    def parse_body(cls, raw: Any) -> ParsedBody:
        parsed = parse_sql_body(raw, "duckdb", _ALWAYS_REFUSED)
        return ParsedBody(to_duckdb_binds(add_escape_clauses(parsed.value, "duckdb")), parsed.placeholders)

    @classmethod
    def check_templates(cls, settings: Any, templates: list[Template]) -> list[ConfigIssue]:
        """Without `allowed_paths`, bodies and values_from queries may not read files or URLs; binds may not
        be GLOB / regex patterns unless the parameter allows patterns."""
        issues = []
        for t in templates:
            at = f"templates[id={t.id}]"
            for key, message in pattern_issues(t, "duckdb", [(f"{at}.sql", t.body)]):
                issues.append(ConfigIssue(t.source_file or "templates", t.source_line, key, message))
            if settings.connection.allowed_paths:
                continue
            queries = [(f"{at}.sql", t.body)] + [
                (f"{at}.parameters[{i}].values_from.query", p.values_from.query)
                for i, p in enumerate(t.parameters)
                if p.values_from is not None
            ]
            for key, sql in queries:
                if isinstance(sql, str) and (problem := file_access_problem(sql)):
                    issues.append(ConfigIssue(t.source_file or "templates", t.source_line, key, problem))
        return issues

    def __init__(self, settings, context) -> None:
        super().__init__(settings, context)
        self._conn: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()
        self._file: FileIdentity | None = None  # the database file the connection reads
        self._reopen_lock = asyncio.Lock()
        self._closed = False  # closed for good: a request still running on a retired runtime opens nothing
        self._open_failed: str | None = None  # why the file did not open at start (a question tries again)

    @property
    def file_identity(self) -> FileIdentity | None:
        return self._file

    def drop_connection(self) -> None:
        """Another adapter on this file found it replaced: the shared instance must go (duckdb_files.py)."""
        if self._conn is not None:
            self._conn.close()  # kept (closed): the next query finds the file replaced and reopens
        if self._file is not None:  # even if the old file comes back under its old inode before then
            self._file = FileIdentity.unknown(self._file.path)

    def _path(self) -> str:
        raw = self.settings.connection.path
        if raw == ":memory:":
            return raw
        path = Path(raw)
        return str(path if path.is_absolute() else self.context.root / path)

    async def start(self) -> None:
        if self._missing():  # as a SQLite file: the adapter starts down, and opens once the file is there
            log.warning("duckdb adapter %s: database file not found; down until it appears", self.name)
            return
        try:
            await asyncio.to_thread(self._open)
        except SourceUnavailable as exc:
            if exc.reason != _CANNOT_OPEN:
                raise  # a setting that needs a restart: the reload must say so
            # a file that is not a database (yet): this adapter starts down (_open said why), the others serve
            log.warning("duckdb adapter %s: %s; down until a question finds it readable", self.name, exc.reason)

    def _missing(self) -> bool:
        path = self._path()
        return path != ":memory:" and not Path(path).exists()

    def _not_open_reason(self) -> str:
        if self._closed:
            return "not connected"
        if self._missing():
            return "database file not found"
        if self._open_failed is not None:
            return self._open_failed
        return "database file not opened yet (the next question opens it)"

    async def _connection(self):
        """The open connection; a database file missing at start is opened on the first query that finds it."""
        if self._conn is not None:
            return self._conn
        if self._closed:
            raise SourceUnavailable(self.name, "adapter is not started")
        if self._missing():
            raise SourceUnavailable(self.name, "database file not found")
        async with self._reopen_lock:
            if self._conn is None and not self._closed:
                await asyncio.to_thread(self._open)
        if self._conn is None:
            raise SourceUnavailable(self.name, "adapter is not started")
        return self._conn

    def _open(self):
        import duckdb

        conn = self.settings.connection
        path = self._path()
        if path != ":memory:" and not Path(path).exists():
            raise SourceUnavailable(self.name, "database file not found")
        # an in-memory database is this connection's own: only files have instances to share (duckdb_files.py),
        # so adapters on `:memory:` open side by side
        guard = contextlib.nullcontext() if path == ":memory:" else duckdb_files.LOCK
        try:
            with guard:
                con = duckdb.connect(
                    path, read_only=conn.read_only and path != ":memory:", config={"threads": conn.threads}
                )
                try:
                    shared = self._close_external_access(con)
                except SourceUnavailable:
                    con.close()
                    raise
                self._conn = con
                self._file = None if path == ":memory:" else duckdb_files.joined(path, self, shared)
        except duckdb.Error as exc:
            log.warning("duckdb adapter %s cannot open %s: %s", self.name, path, exc)
            if isinstance(exc, duckdb.ConnectionException) and "different configuration" in str(exc):
                # the instance this process already holds for the file (the old adapter, during a reload)
                raise SourceUnavailable(
                    self.name, "connection.read_only or threads changed while the database is open: restart the server"
                ) from None
            self._open_failed = _CANNOT_OPEN
            raise SourceUnavailable(self.name, _CANNOT_OPEN) from None
        self._open_failed = None
        return self._conn

    def _close_external_access(self, con) -> bool:
        """Only the listed files and directories stay readable; the configuration is then locked, so
        nothing a query does can open it again. (DuckDB takes these lists only once it is running.)
        True when the instance was open already (another adapter on this file: checked, not set)."""
        files, directories = [], []
        for entry in self.settings.connection.allowed_paths:
            path = Path(entry) if Path(entry).is_absolute() else self.context.root / entry
            if path.is_dir() or entry.endswith("/"):
                directories.append(str(path.resolve()).rstrip("/") + "/")
            else:
                files.append(str(path.resolve()))
        if con.execute("SELECT current_setting('lock_configuration')").fetchone()[0]:
            self._check_locked_access(con, files, directories)
            return True
        con.execute("SET allowed_paths = $1", [files])
        con.execute("SET allowed_directories = $1", [directories])
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        return False

    def _check_locked_access(self, con, files: list[str], directories: list[str]) -> None:
        """DuckDB keeps one instance per file in a process: while a reload's new adapter starts, the old
        one still holds it, locked. That is fine when its access lists are these (DuckDB adds the
        database's own files); a changed `allowed_paths` cannot be applied to a locked instance."""
        current_files, current_dirs, external, own = con.execute(
            "SELECT current_setting('allowed_paths'), current_setting('allowed_directories'),"
            " current_setting('enable_external_access'),"
            " (SELECT path FROM duckdb_databases() WHERE database_name = current_database())"
        ).fetchone()  # `own` as DuckDB names it (real path: no symlink, no `..`), as in its access lists
        extra_files = {f for f in current_files if not f.startswith(own)} - set(files)
        extra_dirs = {d for d in current_dirs if not d.startswith(own)} - set(directories)
        if (
            external
            or extra_files
            or extra_dirs
            or not set(files) <= set(current_files)
            or not (set(directories) <= set(current_dirs))
        ):
            raise SourceUnavailable(
                self.name, "connection.allowed_paths changed while the database is open: restart the server"
            )

    async def _follow_file(self, problem: str) -> None:
        """Missing: the source is down (no stale answers from the deleted inode). Replaced: close and open
        again (DuckDB caches one instance per path, so every connection to the old one must go first,
        also other adapters' on this file; a query still running on it fails as a source error)."""
        if problem == "missing":
            raise SourceUnavailable(self.name, REASONS[problem])
        async with self._reopen_lock:
            if self._file is None or self._file.problem() != "replaced":
                return
            log.warning("duckdb adapter %s: %s; reopening", self.name, REASONS[problem])
            path = self._file.path
            try:
                await asyncio.to_thread(duckdb_files.reopen_fresh, self._path(), self._open)
            except SourceUnavailable:  # e.g. not a database: try again on the next query, whatever is there
                self._file = FileIdentity.unknown(path)
                raise
            await self.forget_cached()

    async def close_source(self) -> None:
        self._closed = True
        if self._conn is not None:
            await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with duckdb_files.LOCK:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._file is not None:
                duckdb_files.left(self._path(), self)

    async def source_health(self) -> dict[str, Any]:
        conn = self._conn
        if conn is None:
            return {"status": Health.DOWN, "reason": self._not_open_reason()}
        if (down := self.file_down()) is not None:
            return down
        try:
            await run_on(HEALTH_POOL, lambda: conn.cursor().execute("SELECT 1").fetchall())
            return {"status": Health.OK}
        except Exception:
            return {"status": Health.DOWN, "reason": "database error"}

    async def check_against_source(self) -> SourceCheck:
        """Each body bound by DuckDB with typed NULL binds (DESCRIBE of the query: the columns it would
        return; names resolve, nothing runs, and it is 3x quicker than EXPLAIN's physical plan)."""
        templates = list(self.templates.values())
        conn, down = self._conn, self.file_down()
        if conn is None or down is not None:
            reason = down["reason"] if down else self._not_open_reason()
            return SourceCheck.unchecked(self.name, len(templates), reason)
        ask = functools.partial(_refused_templates, conn)
        label, timeout = f"{self.name} (duckdb)", self.settings.query_timeout
        accepted, identity = self.context.accepted_bodies, self.source_identity()
        return await check_in_thread(self.name, label, "sql", templates, ask, timeout, accepted, identity)

    def source_identity(self) -> str | None:
        """DuckDB's version, the connection settings and the database file as it is now (an in-memory
        database starts empty every time). None when templates may read other files (`allowed_paths`):
        a CSV's columns can change under an unchanged database."""
        import duckdb

        connection = self.settings.connection
        if connection.allowed_paths:
            return None
        path = self._path()
        where = path if path == ":memory:" else file_identity(Path(path))
        if where is None:
            return None
        return f"duckdb {duckdb.__version__}|{connection.model_dump_json()}|{where}"

    async def execute(self, template: Template, params: dict[str, Any], max_rows: int | None = None) -> QueryResult:
        conn = await self._connection()
        await self.check_source()
        params = escaped_params(template, params, "duckdb")
        sql, cap = template.body, self.row_cap(max_rows)
        if self.answering(max_rows):  # the template's own LIMIT asks for one row more (own_limit.py)
            query = limited_query(sql, params, "duckdb", cap)
            sql, params, cap = query.sql, query.params, query.cap
        cursor = (self._conn or conn).cursor()  # a file replaced meanwhile was opened again (check_source)
        timeout = self.query_timeout
        try:
            task = await self.bulkhead.thread(self._run, cursor, sql, params, cap)  # 503 source_busy when full
        except BaseException:
            cursor.close()
            raise
        try:
            async with asyncio.timeout(timeout):  # not wait_for: 3.11 wait_for can swallow the request cancel
                return await task
        except TimeoutError:
            cursor.interrupt()
            raise SourceTimeout(self.name, timeout) from None
        except Exception as exc:
            down = is_source_error(exc)
            kind = "down" if down else "failed"
            log.warning("duckdb adapter %s template %s (%s): %s", self.name, template.id, kind, exc)
            if down:
                raise SourceUnavailable(self.name, "the database cannot be read") from None
            raise QueryFailed(self.name, f"template '{template.id}' failed to run") from None

    def counting(self, template: Template, params: dict[str, Any], defaults: frozenset[str]) -> Counting | None:
        query = counting_query(template.body, "duckdb", defaults)
        return None if query is None else Counting.of(template, query.sql, params, query.lifted)

    def _run(self, cursor, sql: str, params: dict[str, Any], cap: int) -> QueryResult:
        try:
            result = cursor.execute(sql, params)
            columns = [d[0] for d in result.description or []]
            fetched = result.fetchmany(cap + 1)
        finally:
            cursor.close()
        rows = [{c: to_json_value(v) for c, v in zip(columns, row, strict=True)} for row in fetched[:cap]]
        return QueryResult(rows=rows, columns=columns, truncated=len(fetched) > cap)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "backend": "duckdb"}


def _refused_templates(conn: duckdb.DuckDBPyConnection, templates: list[Template]) -> list[tuple[Template, str]]:
    """(template, DuckDB's message) for each body DuckDB cannot bind; SourceDown when the database cannot be read."""
    import duckdb

    refused = []
    cursor = conn.cursor()
    try:
        for template in templates:
            body, binds = typed_nulls(template, "duckdb", "duckdb", lambda name: f"${name}")
            try:
                cursor.execute(f"DESCRIBE {body}", dict.fromkeys(binds))
            except duckdb.Error as exc:
                if is_source_error(exc):
                    raise SourceDown("the database cannot be read") from None
                refused.append((template, first_line(str(exc))))
    finally:
        cursor.close()
    return refused


@remembered("duckdb.file_access_problem/1")
@functools.lru_cache(maxsize=50_000)  # reloads check unchanged templates again; parse each text once
def file_access_problem(sql: str) -> str | None:
    """Why this DuckDB query would read files or URLs (a reader function, FROM 'path'), or None."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return None  # parse_body already refused it
    for name in function_names(tree):
        if name in _FILE_READERS or name.startswith(_FILE_READER_PREFIXES) or name.endswith(_FILE_READER_SUFFIXES):
            return f"function {name}() reads files or URLs; list what it may read in connection.allowed_paths"
    for name in path_like_tables(tree):
        return f"FROM '{name}' reads a file or URL; list what it may read in connection.allowed_paths"
    return None


def is_source_error(exc: BaseException) -> bool:
    """True when DuckDB says the database (not the query) is broken; decided by exception class, never text."""
    import duckdb

    return any(isinstance(exc, cls) for name in _DOWN_ERRORS if isinstance(cls := getattr(duckdb, name, None), type))
