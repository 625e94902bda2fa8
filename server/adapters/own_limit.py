"""A SQL template's own LIMIT, run one row higher so that an answer it cut says so.

`LIMIT :limit` with limit 100 returns exactly 100 rows whether the table holds 100 or 10,000: the
answer cannot tell "all of them" from "the first 100". So when an answer is fetched, the template's
own top-level LIMIT asks for one row more (the bind is given limit + 1; a written number is raised by
one in the text run, a constant of the template, never a value of the question), the rows are trimmed
back to the limit, and the extra row, when it came, is what sets `truncated`.

Only a plain top-level `LIMIT :name` (a bind used nowhere else in the body) or `LIMIT <number>`,
optionally followed by OFFSET, is recognised; anything else (an expression, a LIMIT inside a subquery,
`LIMIT offset, count`) runs as written and is cut by the adapter's `max_rows` alone.

A "how many" question that a cut list answers gets the list's total from `counting_query`: the same
body in a `SELECT COUNT(*)`, its own LIMIT cut off when the question left that limit at its default.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot.tokens import Token, TokenType

_BIND_MARKS = (TokenType.COLON, TokenType.PARAMETER)  # `:name` (sqlite form) and `$name` (duckdb form)


@dataclass(frozen=True)
class OwnLimit:
    """The top-level LIMIT of a body: a bind's name, or a written number and where it is in the text."""

    parameter: str | None = None
    value: int | None = None
    start: int = 0
    end: int = 0


@dataclass(frozen=True)
class LimitedQuery:
    """What to run for an answer: the text, the binds, and the rows the answer may show (`cap`)."""

    sql: str
    params: dict[str, Any]
    cap: int


def _bind_at(tokens: list[Token], i: int) -> str | None:
    """The bind name when tokens[i] is a `:` or `$` glued to the name that follows it."""
    if i + 1 < len(tokens) and tokens[i].token_type in _BIND_MARKS and tokens[i + 1].start == tokens[i].end + 1:
        return tokens[i + 1].text
    return None


def _top_level_limit(tokens: list[Token]) -> int | None:
    """The index of the body's last LIMIT outside parentheses, if there is one."""
    depth, at = 0, None
    for i, tok in enumerate(tokens):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif tok.token_type == TokenType.LIMIT and depth == 0 and (i == 0 or _bind_at(tokens, i - 1) is None):
            at = i  # a `:limit` bind's name is also a LIMIT token: skipped above
    return at


@functools.lru_cache(maxsize=50_000)  # bodies are fixed per template: tokenise each text once
def own_limit(sql: str, dialect: str) -> OwnLimit | None:
    """The body's top-level LIMIT when it is a plain bind or number (see the module docstring), else None."""
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except sqlglot.errors.TokenError:
        return None
    at = _top_level_limit(tokens)
    if at is None:
        return None
    rest = tokens[at + 1 :]
    name = _bind_at(rest, 0)
    width = 2 if name is not None else 1
    if len(rest) < width or (len(rest) > width and rest[width].token_type != TokenType.OFFSET):
        return None
    if name is not None:
        uses = sum(1 for i in range(len(tokens)) if _bind_at(tokens, i) == name)
        return OwnLimit(parameter=name) if uses == 1 else None
    number = rest[0]
    if number.token_type == TokenType.NUMBER and number.text.isdigit():
        return OwnLimit(value=int(number.text), start=number.start, end=number.end + 1)
    return None


def limited_query(sql: str, params: dict[str, Any], dialect: str, cap: int) -> LimitedQuery:
    """The query an answer runs: with the template's own LIMIT one higher, and the answer's cap the smaller
    of `cap` (the adapter's max_rows) and that LIMIT; fetch `cap + 1` rows to know whether it was cut."""
    found = own_limit(sql, dialect)
    if found is None:
        return LimitedQuery(sql, params, cap)
    if found.parameter is not None:
        value = params.get(found.parameter)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return LimitedQuery(sql, params, cap)  # no limit (NULL), or one the database will judge
        return LimitedQuery(sql, {**params, found.parameter: value + 1}, min(cap, value))
    assert found.value is not None
    if found.value < 1:
        return LimitedQuery(sql, params, cap)
    raised = f"{sql[: found.start]}{found.value + 1}{sql[found.end :]}"
    return LimitedQuery(raised, params, min(cap, found.value))


@dataclass(frozen=True)
class CountingQuery:
    """A body's rows counted: the text to run, and the binds of the LIMIT clause it no longer has."""

    sql: str
    lifted: frozenset[str]


@functools.lru_cache(maxsize=5_000)
def counting_query(sql: str, dialect: str, defaults: frozenset[str]) -> CountingQuery | None:
    """`SELECT COUNT(*)` over the body, for a list whose answer was cut: its top-level LIMIT (and OFFSET)
    cut off when every bind in that clause is a parameter the question left at its default (`defaults`).
    None when the limit is the question's own ("the top 20 ...") or written in the text ("top 10
    earners"): such a list holds what it was asked for, and its total is not what a count of it means."""
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except sqlglot.errors.TokenError:
        return None
    end = tokens[-1].start if tokens and tokens[-1].token_type == TokenType.SEMICOLON else len(sql)
    at = _top_level_limit(tokens)
    lifted: frozenset[str] = frozenset()
    if at is not None:
        clause = {name for i in range(at, len(tokens)) if (name := _bind_at(tokens, i)) is not None}
        if _bind_at(tokens, at + 1) not in defaults or not clause <= defaults:
            return None  # the LIMIT's value is written ("LIMIT 10 OFFSET :skip"), or a value the question gave
        kept = {name for i in range(at) if (name := _bind_at(tokens, i)) is not None}
        lifted = frozenset(clause - kept)
        end = tokens[at].start
    # the body on lines of its own: a `-- comment` on its last line must not swallow the closing parenthesis
    return CountingQuery(f"SELECT COUNT(*) AS total_rows FROM (\n{sql[:end].rstrip()}\n) AS counted_rows", lifted)
