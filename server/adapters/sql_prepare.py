"""The sql adapter's schema check (source_check.py): each template body planned by its own database.

SQLite and PostgreSQL: `EXPLAIN <body>` with NULL binds (typed by CASTs for PostgreSQL, which must know
a parameter's type to plan) compiles and plans without running. MySQL/MariaDB cannot take NULL where a
LIMIT wants a number, so the body is prepared on the server instead (`PREPARE ... FROM @text`, with `?`
marks, then deallocated), which resolves every table and column without running either. Connections are
the adapter's own (read-only where the connection says so), and every statement is rolled back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..templates import Template
from .source_check import SourceDown, first_line, rebind, typed_nulls

Classify = Callable[[BaseException, str], str]  # sql.classify_error: timeout | down | read_only | failed


def refused_templates(
    engine: Engine, backend: str, templates: list[Template], classify: Classify
) -> list[tuple[Template, str]]:
    """(template, the database's message) for every body the database refuses; SourceDown when it cannot
    be asked at all (the first connection or statement fails as a source failure, not a query's)."""
    refused: list[tuple[Template, str]] = []
    try:
        with engine.connect() as conn:
            for template in templates:
                try:
                    _prepare(conn, backend, template)
                except DBAPIError as exc:
                    if classify(exc, backend) in ("down", "timeout"):
                        raise SourceDown(_down_reason(classify(exc, backend))) from None
                    refused.append((template, database_message(exc, backend)))
                finally:
                    conn.rollback()
    except SourceDown:
        raise
    except (DBAPIError, SQLAlchemyError, OSError) as exc:  # connecting failed
        raise SourceDown(_down_reason(classify(exc, backend))) from None
    return refused


def _prepare(conn: Connection, backend: str, template: Template) -> None:
    if backend in {"mysql", "mariadb"}:
        marked = rebind(template.body, "sqlite", lambda _name: "?")
        conn.execute(text("SET @ir_template_check = :body"), {"body": marked})
        try:
            conn.exec_driver_sql("PREPARE ir_template_check FROM @ir_template_check")
            conn.exec_driver_sql("DEALLOCATE PREPARE ir_template_check")
        finally:
            conn.exec_driver_sql("SET @ir_template_check = NULL")
        return
    body, binds = typed_nulls(template, "sqlite", backend, lambda name: f":{name}")
    conn.execute(text(f"EXPLAIN {body}"), dict.fromkeys(binds))


def database_message(exc: DBAPIError, backend: str) -> str:
    """What the database said, first line only (no statement text, no values: there are none, binds are NULL)."""
    orig: Any = exc.orig
    if backend == "postgresql":
        primary = getattr(getattr(orig, "diag", None), "message_primary", None)
        if primary:
            return str(primary)
    if backend in {"mysql", "mariadb"} and orig is not None and len(orig.args) > 1:
        return first_line(str(orig.args[1]))
    return first_line(str(orig if orig is not None else exc))


def _down_reason(kind: str) -> str:
    return "the database did not answer in time" if kind == "timeout" else "cannot connect to the database"
