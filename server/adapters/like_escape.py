"""Values bound into LIKE patterns match literally: `%` and `_` in them are escaped.

A template such as `WHERE name ILIKE '%' || :customer || '%'` means "contains"; the question
`orders for "%"` must not turn it into "everything". At load, every LIKE / ILIKE whose pattern holds a
bind gets an explicit `ESCAPE '!'` clause inserted into the SQL text right after its pattern (`!` is
plain in every dialect's string literals, unlike the backslash, and SQLite and DuckDB have no default
escape character). At execution those binds' string values have `!`, `%` and `_` prefixed with the
escape character, unless the parameter declares `pattern_allowed: true`. A LIKE that already has an
ESCAPE clause keeps it and its character is used.

The pattern's extent is found on the token stream (operands joined by `||`, `+`, ... with calls,
parentheses, CASE and `::` casts); the AST says which binds are LIKE patterns, and the two must agree,
otherwise the template is refused at load rather than left unescaped.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from ..config.parse_cache import NAMES, remembered
from ..templates import Template

ESCAPE = "!"
LIKE_PREFIX = "__like_"
_LIKE = {TokenType.LIKE, TokenType.ILIKE}
_BINARY = {TokenType.DPIPE, TokenType.PLUS, TokenType.DASH, TokenType.STAR, TokenType.SLASH, TokenType.MOD}
_BIND_START = {TokenType.COLON, TokenType.PARAMETER}


@dataclass(frozen=True)
class LikePatterns:
    """The LIKE-pattern binds of a query: each is `__like_<parameter>` with its LIKE's escape character."""

    escapes: dict[str, tuple[str, str]]  # bind in the SQL -> (parameter, escape character)
    dropped: frozenset[str]  # parameters that only appeared in LIKE patterns (no longer bound by name)

    def escape_values(self, params: dict[str, Any], allowed: set[str]) -> dict[str, Any]:
        if not self.escapes:
            return params
        out = dict(params)
        for bind, (name, char) in self.escapes.items():
            value = params.get(name)
            out[bind] = escape_like(value, char) if isinstance(value, str) and name not in allowed else value
        for name in self.dropped:
            out.pop(name, None)
        return out


def escaped_params(template: Template, params: dict[str, Any], dialect: str) -> dict[str, Any]:
    """`params` plus the escaped values of the LIKE-pattern binds (the one place adapters call)."""
    if not isinstance(template.body, str):
        return params
    allowed = {p.name for p in template.parameters if p.pattern_allowed}
    return like_patterns(template.body, dialect).escape_values(params, allowed)


def escape_like(value: str, char: str = ESCAPE) -> str:
    return "".join(char + c if c in ("%", "_", char) else c for c in value)


def add_escape_clauses(sql: str, dialect: str) -> str:
    """The SQL with every bind inside a LIKE pattern renamed `__like_<name>` (so the same parameter used
    elsewhere, e.g. `name = :q`, keeps its raw value) and `ESCAPE '!'` after each such pattern (unless it
    has an ESCAPE clause already)."""
    if "like" not in sql.lower() and "~~" not in sql:  # no LIKE / ILIKE (PostgreSQL: ~~), no reserved name
        return sql  # (parsing costs ~1 ms a template: a start with thousands of them had paid it for nothing)
    tokens = sqlglot.tokenize(sql, read=dialect)
    ast_binds = _ast_like_binds(sql, dialect)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in the text
    found: set[str] = set()
    for i, tok in enumerate(tokens):
        if tok.token_type not in _LIKE:
            continue
        end, binds = _operand(tokens, i + 1)
        if not binds:
            continue
        for at in binds:
            name = tokens[at]
            found.add(name.text)
            edits.append((name.start, name.end + 1, LIKE_PREFIX + name.text))
        if not (end < len(tokens) and tokens[end].token_type == TokenType.ESCAPE):
            at = tokens[end - 1].end + 1
            edits.append((at, at, f" ESCAPE '{ESCAPE}'"))
    if found != ast_binds:
        missing = ", ".join(sorted(ast_binds - found) or sorted(found - ast_binds))
        raise ValueError(
            f"cannot tell where the LIKE pattern holding :{missing} ends to escape its wildcards; "
            "simplify the pattern expression (e.g. '%' || :name || '%')"
        )
    if any(_is_bind(tokens, i) and tokens[i + 1].text.startswith(LIKE_PREFIX) for i in range(len(tokens))):
        raise ValueError(f"bind names starting with {LIKE_PREFIX} are reserved")
    for start, stop, text in sorted(edits, reverse=True):
        sql = sql[:start] + text + sql[stop:]
    return sql


@functools.lru_cache(maxsize=50_000)
def like_patterns(sql: str, dialect: str) -> LikePatterns:
    """The LIKE-pattern binds of a query that went through `add_escape_clauses` (cached per text)."""
    tokens = sqlglot.tokenize(sql, read=dialect)
    escapes: dict[str, tuple[str, str]] = {}
    for i, tok in enumerate(tokens):
        if tok.token_type not in _LIKE:
            continue
        end, binds = _operand(tokens, i + 1)
        char = ESCAPE
        if end + 1 < len(tokens) and tokens[end].token_type == TokenType.ESCAPE:
            char = tokens[end + 1].text or ESCAPE
        for at in binds:
            bind = tokens[at].text
            if bind.startswith(LIKE_PREFIX):
                escapes[bind] = (bind.removeprefix(LIKE_PREFIX), char)
    bound = {tokens[i + 1].text for i in range(len(tokens) - 1) if _is_bind(tokens, i)}
    dropped = frozenset(name for name, _ in escapes.values() if name not in bound)
    return LikePatterns(escapes, dropped)


_REGEX_NODES = (exp.Glob, exp.SimilarTo, exp.RegexpLike, exp.RegexpILike, exp.RegexpReplace, exp.RegexpExtract)


@remembered("like_escape.regex_pattern_binds/1", NAMES)
@functools.lru_cache(maxsize=50_000)
def regex_pattern_binds(sql: str, dialect: str) -> frozenset[str]:
    """Binds used as the pattern of GLOB, SIMILAR TO or a regular expression (~, REGEXP, regexp_*):
    no portable escaping exists, so the loader refuses them unless the parameter allows patterns."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError:
        return frozenset()
    names: set[str] = set()
    for node in tree.find_all(*_REGEX_NODES):
        pattern = node.expression
        if pattern is not None:
            names |= {p.name for p in pattern.find_all(exp.Placeholder, exp.Parameter) if p.name}
    return frozenset(names)


def pattern_issues(template: Template, dialect: str, queries: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """(key, message) for each bind of a template that reaches a GLOB / regex pattern without
    `pattern_allowed: true`."""
    allowed = {p.name for p in template.parameters if p.pattern_allowed}
    out = []
    for key, sql in queries:
        if not isinstance(sql, str):
            continue
        for name in sorted(regex_pattern_binds(sql, dialect) - allowed):
            out.append(
                (
                    key,
                    f":{name} is bound into a GLOB / SIMILAR TO / regular-expression pattern, where its "
                    f"metacharacters are live; declare pattern_allowed: true on parameter '{name}' if intended",
                )
            )
    return out


def _ast_like_binds(sql: str, dialect: str) -> set[str]:
    tree = sqlglot.parse_one(sql, read=dialect)
    names: set[str] = set()
    for node in tree.find_all(exp.Like, exp.ILike):
        pattern = node.expression
        names |= {p.name for p in pattern.find_all(exp.Placeholder, exp.Parameter) if p.name}
    return names


def _is_bind(tokens: list[Token], i: int) -> bool:
    """A `:name` / `$name` bind starts at token i."""
    return tokens[i].token_type in _BIND_START and i + 1 < len(tokens) and tokens[i + 1].start == tokens[i].end + 1


def _operand(tokens: list[Token], i: int) -> tuple[int, set[int]]:
    """Index after the pattern operand starting at i, and the token indices of the bind names in it."""
    binds: set[int] = set()
    while True:
        while i < len(tokens) and tokens[i].token_type in (TokenType.DASH, TokenType.PLUS):
            i += 1  # unary sign
        if i >= len(tokens):
            return i, binds
        tok = tokens[i]
        if _is_bind(tokens, i):
            binds.add(i + 1)
            i += 2
        elif tok.token_type == TokenType.L_PAREN:
            i = _after_group(tokens, i, TokenType.L_PAREN, TokenType.R_PAREN, binds)
        elif tok.token_type == TokenType.CASE:
            i = _after_group(tokens, i, TokenType.CASE, TokenType.END, binds)
        else:
            i += 1  # literal, column, function name
            while i + 1 < len(tokens) and tokens[i].token_type == TokenType.DOT:
                i += 2
            if i < len(tokens) and tokens[i].token_type == TokenType.L_PAREN:
                i = _after_group(tokens, i, TokenType.L_PAREN, TokenType.R_PAREN, binds)
        while i + 1 < len(tokens) and tokens[i].token_type == TokenType.DCOLON:  # ::type, ::type(n)
            i += 2
            if i < len(tokens) and tokens[i].token_type == TokenType.L_PAREN:
                i = _after_group(tokens, i, TokenType.L_PAREN, TokenType.R_PAREN, binds)
        if i < len(tokens) and tokens[i].token_type in _BINARY:
            i += 1
            continue
        return i, binds


def _after_group(tokens: list[Token], i: int, opening: TokenType, closing: TokenType, binds: set[int]) -> int:
    """Index after the group opened at i (nested), collecting the binds inside."""
    depth = 0
    while i < len(tokens):
        kind = tokens[i].token_type
        if kind == opening:
            depth += 1
        elif kind == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        elif _is_bind(tokens, i):
            binds.add(i + 1)
        i += 1
    return i
