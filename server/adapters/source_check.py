"""Templates checked against their live source before a user meets them.

A column typo (`SELECT titel ...`) parses, passes the read-only guard and loads; then every question it
answers gets 502 "failed to run" and only the server log says `no such column: titel`. So when a config
is loaded (the server's start, every reload, `run.py validate`), each data adapter asks its own source
whether each template body would run: SQL and DuckDB bodies are planned, bound or prepared with NULL
binds (typed where the database needs a type), which reads no rows and can write nothing; a MongoDB collection
and an Elasticsearch index must exist. A refusal is a config error like any other: file:line of the
template, its id, and the database's own message (its first line: names of tables and columns, never
values or the statement). A source that cannot be reached then is not an error: its templates are
reported as *unchecked* (a warning, in /health and `validate`) and are checked by the next load that
reaches it.

This module holds the result type and the helpers the adapters share; each adapter type implements
`DataAdapter.check_against_source` (types without a schema to ask, http and graphql, keep the default).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlglot
from sqlglot.tokens import TokenType

from ..config.errors import ConfigIssue
from ..templates import ParameterType, Template
from .accepted_bodies import AcceptedBodies
from .like_escape import LIKE_PREFIX

Status = Literal["checked", "unchecked", "not_checked"]


@dataclass(frozen=True)
class SourceCheck:
    """What asking the source found: `checked` (issues: the templates it refused), `unchecked` (the source
    could not be asked: `reason`), or `not_checked` (this adapter type has no schema to ask)."""

    adapter: str
    status: Status
    templates: int = 0
    reason: str = ""
    issues: tuple[ConfigIssue, ...] = field(default_factory=tuple)

    @classmethod
    def unchecked(cls, adapter: str, templates: int, reason: str) -> SourceCheck:
        return cls(adapter, "unchecked", templates, reason)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "templates": self.templates}
        if self.reason:
            out["reason"] = self.reason
        if self.issues:
            out["refused"] = len(self.issues)
        return out

    def warning(self) -> str | None:
        """The line a load reports for an unchecked source (None when there is nothing to say)."""
        if self.status != "unchecked":
            return None
        return (
            f"adapter '{self.adapter}': {self.templates} templates not checked against the source ({self.reason});"
            " the next load or reload that reaches it checks them"
        )


class SourceDown(Exception):
    """The source cannot be asked now (connection refused, timeout, file missing): the check is skipped."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def refusal(source: str, template: Template, key: str, message: str) -> ConfigIssue:
    """A template the source refused: its file and the line of the key refused (the body's, for the body),
    its id and what the database said."""
    return ConfigIssue(
        template.source_file or "templates",
        template.body_line if key == template.body_key and template.body_line else template.source_line,
        f"templates[id={template.id}].{key}",
        f"{source} refuses it: {message}",
    )


def first_line(message: str) -> str:
    """A driver's message as an operator needs it: its first line (DuckDB's and PostgreSQL's next lines
    quote the statement), plus DuckDB's "Did you mean" / candidate line, which names objects only."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    if not lines:
        return "refused without a message"
    hints = [line for line in lines[1:3] if line.startswith(("Did you mean", "Candidate bindings"))]
    return " ".join([lines[0], *hints])


@functools.lru_cache(maxsize=50_000)  # a reload checks unchanged bodies again: tokenise each text once
def bind_spans(sql: str, dialect: str) -> tuple[tuple[int, int, str], ...]:
    """(start, end, name) of every `:name` (sqlite form) or `$name` (duckdb form) bind, found by the tokenizer
    (strings, comments and `::` casts are not binds)."""
    tokens = sqlglot.tokenize(sql, read=dialect)
    marks = (TokenType.COLON, TokenType.PARAMETER)
    return tuple(
        (tok.start, nxt.end + 1, nxt.text)
        for tok, nxt in itertools.pairwise(tokens)
        if tok.token_type in marks and nxt.start == tok.end + 1
    )


def rebind(sql: str, dialect: str, replace: Callable[[str], str]) -> str:
    """The SQL with every bind replaced by `replace(name)`. For the check's statement only: the query that
    answers questions is never rewritten."""
    out, last = [], 0
    for start, end, name in bind_spans(sql, dialect):
        out.append(sql[last:start])
        out.append(replace(name))
        last = end
    out.append(sql[last:])
    return "".join(out)


# the SQL type of a NULL standing for a parameter, where the database must know it ("year(NULL)" is ambiguous)
CAST_TYPES: Mapping[str, Mapping[ParameterType, str]] = {
    "duckdb": {
        ParameterType.INTEGER: "BIGINT",
        ParameterType.NUMBER: "DOUBLE",
        ParameterType.STRING: "VARCHAR",
        ParameterType.ENUM: "VARCHAR",
        ParameterType.BOOLEAN: "BOOLEAN",
        ParameterType.DATE: "DATE",
        ParameterType.DATETIME: "TIMESTAMP",
        ParameterType.TIME: "TIME",
    },
    "postgresql": {
        ParameterType.INTEGER: "bigint",
        ParameterType.NUMBER: "numeric",
        ParameterType.STRING: "text",
        ParameterType.ENUM: "text",
        ParameterType.BOOLEAN: "boolean",
        ParameterType.DATE: "date",
        ParameterType.DATETIME: "timestamp",
        ParameterType.TIME: "time",
    },
}


def typed_nulls(template: Template, dialect: str, backend: str, bind: Callable[[str], str]) -> tuple[str, list[str]]:
    """The body with each bind given a type by a CAST (a parameter with no SQL type, an array, stays bare),
    and the names of its binds (to bind NULL to each). `bind(name)` writes a bind in the statement's form.
    A LIKE pattern's bind (`__like_<parameter>`, adapters/like_escape.py) is typed as its parameter."""
    types = CAST_TYPES.get(backend, {})
    names: list[str] = []

    def typed(name: str) -> str:
        names.append(name)
        spec = template.parameter(name.removeprefix(LIKE_PREFIX))
        sql_type = types.get(spec.type) if spec is not None else None
        return f"CAST({bind(name)} AS {sql_type})" if sql_type else bind(name)

    return rebind(template.body, dialect, typed), list(dict.fromkeys(names))


Ask = Callable[[list[Template]], list[tuple[Template, str]]]  # (template, the database's message) per refusal


async def check_in_thread(
    adapter: str,
    label: str,
    key: str,
    templates: list[Template],
    ask: Ask,
    timeout: float,
    accepted: AcceptedBodies | None = None,
    identity: str | None = None,
) -> SourceCheck:
    """Run a blocking `ask` over the templates in a thread, within `timeout`: refusals become issues, a
    source that is down or too slow makes the check `unchecked`. With `accepted` and the source's
    `identity`, bodies this very source accepted before are not asked again, and those it accepts now
    are remembered (accepted_bodies.py)."""
    accepted = accepted if accepted is not None else AcceptedBodies(None)
    unknown = accepted.unknown(identity, templates)
    try:
        async with asyncio.timeout(timeout):
            refused = await asyncio.to_thread(ask, unknown) if unknown else []
    except TimeoutError:
        return SourceCheck.unchecked(adapter, len(templates), "the source did not answer in time")
    except SourceDown as exc:
        return SourceCheck.unchecked(adapter, len(templates), exc.reason)
    refused_ids = {id(t) for t, _ in refused}
    accepted.accepted(identity, (t for t in unknown if id(t) not in refused_ids))
    issues = tuple(refusal(label, t, key, message) for t, message in refused)
    return SourceCheck(adapter, "checked", len(templates), issues=issues)
