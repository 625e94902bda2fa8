"""Read-only, single-statement SQL guard and bind-name extraction (shared by sql and duckdb).

Besides statements, some functions reach outside the query (files, extensions, SQL held in a string):
each adapter passes the names it refuses, and `function_names` / `path_like_tables` let it look further.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from ..config.parsed_body import ParsedBody

_WRITES = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Command,
    exp.TruncateTable,
    exp.Into,
    exp.Set,
    exp.Pragma,
    exp.Use,
    exp.Grant,
    exp.Copy,
    exp.LoadData,
    exp.Attach,
    exp.Detach,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
)
_QUERIES = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery)


def parse_sql_body(raw: object, dialect: str, forbidden_functions: frozenset[str] = frozenset()) -> ParsedBody:
    """Accept exactly one read-only query calling none of `forbidden_functions`; return it with the names of
    its `:name` binds."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError("sql must be a non-empty string")
    try:
        statements = [s for s in sqlglot.parse(raw, read=dialect) if s is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise ValueError(f"SQL does not parse: {first.get('description', 'syntax error')}") from None
    if len(statements) != 1:
        raise ValueError(f"sql must be exactly one statement (found {len(statements)})")
    tree = statements[0]
    if not isinstance(tree, _QUERIES):
        raise ValueError(f"sql must be a read-only query (SELECT/WITH), not {tree.key.upper()}")
    for node in tree.walk():
        if isinstance(node, _WRITES):
            raise ValueError(f"sql must be read-only: {node.key.upper()} is not allowed")
    for name in function_names(tree) + [t.name.lower() for t in tree.find_all(exp.Table)]:  # FROM fsdir, no ()
        if name in forbidden_functions:
            raise ValueError(f"function {name}() is not allowed in a template")
    placeholders = list(tree.find_all(exp.Placeholder))
    names = frozenset(p.name for p in placeholders if p.this)
    if any(not p.this for p in placeholders):
        raise ValueError("use named binds (:name); positional '?' placeholders are not allowed")
    return ParsedBody(raw.strip(), names)


def function_names(tree: exp.Expr) -> list[str]:
    """Lower-case names of every function called in the tree (table functions included)."""
    return [
        (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower() for node in tree.find_all(exp.Func)
    ]


def path_like_tables(tree: exp.Expr) -> list[str]:
    """Table references that name a file or URL (`FROM 'data.csv'`, `FROM "/etc/passwd"`), which DuckDB reads."""
    found = []
    for table in tree.find_all(exp.Table):
        name = table.name
        quoted = table.this is not None and bool(table.this.args.get("quoted"))
        if any(c in name for c in "/\\:*?") or (quoted and "." in name):  # a path, URL, glob or file.ext
            found.append(name)
    return found
