"""Typed parameter substitution into parsed, JSON-like query bodies (MongoDB, Elasticsearch, HTTP, GraphQL).

A placeholder is a whole value: the mapping `{"$param": "make"}` or the string `"{{make}}"` standing
alone. At parse time it becomes a `Placeholder` node in the tree; at run time `render` swaps each node
for the parameter's typed value. Nothing is ever formatted into text, so a parameter value can only
ever be a literal: a string stays a string (it cannot become an operator object, a key or a query
fragment) and mapping values are refused outright.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..config.parsed_body import ParsedBody

PARAM_KEY = "$param"
_WHOLE = re.compile(r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Placeholder:
    """Where a parameter's value goes in a parsed body."""

    name: str


class LiteralValueError(ValueError):
    """A parameter value that cannot be carried as a plain literal."""


def parse_structure(raw: Any, where: str = "body") -> ParsedBody:
    """Replace placeholders by `Placeholder` nodes; reject placeholders that are not whole values."""
    names: set[str] = set()
    value = _parse(raw, (), names, where)
    return ParsedBody(value, frozenset(names))


def _parse(node: Any, path: Path, names: set[str], where: str) -> Any:
    if isinstance(node, Mapping):
        if PARAM_KEY in node:
            if len(node) != 1 or not isinstance(node[PARAM_KEY], str) or not _NAME.match(node[PARAM_KEY]):
                raise ValueError(f'{_show(where, path)}: a placeholder is exactly {{"$param": <parameter name>}}')
            names.add(node[PARAM_KEY])
            return Placeholder(node[PARAM_KEY])
        out: dict[str, Any] = {}
        for key, child in node.items():
            if not isinstance(key, str):
                raise ValueError(f"{_show(where, path)}: keys must be strings (got {key!r})")
            if "{{" in key or key == PARAM_KEY:
                raise ValueError(f"{_show(where, path)}: a placeholder cannot stand for a key ({key!r})")
            out[key] = _parse(child, (*path, key), names, where)
        return out
    if isinstance(node, list | tuple):
        return [_parse(child, (*path, i), names, where) for i, child in enumerate(node)]
    if isinstance(node, str):
        match = _WHOLE.match(node)
        if match:
            names.add(match.group(1))
            return Placeholder(match.group(1))
        if "{{" in node:
            raise ValueError(
                f"{_show(where, path)}: a placeholder must be a whole value, never part of a string ({node!r})"
            )
        return node
    if node is None or isinstance(node, bool | int | float | dt.date | dt.datetime):
        return node
    raise ValueError(f"{_show(where, path)}: unsupported value {node!r}")


def _show(where: str, path: Path) -> str:
    return where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def placeholders_in(tree: Any, path: Path = ()) -> Iterator[tuple[Path, Placeholder]]:
    """Every placeholder with the path of keys/indices that leads to it."""
    if isinstance(tree, Placeholder):
        yield path, tree
    elif isinstance(tree, dict):
        for key, child in tree.items():
            yield from placeholders_in(child, (*path, key))
    elif isinstance(tree, list):
        for i, child in enumerate(tree):
            yield from placeholders_in(child, (*path, i))


def pattern_issues(template: Any, trees: list[tuple[str, Any]], is_pattern: Callable[[Path], bool]) -> list:
    """ConfigIssues for placeholders the backend reads as a pattern (a regex, a wildcard) whose parameter
    does not declare `pattern_allowed: true`: their metacharacters would be live."""
    from ..config.errors import ConfigIssue

    allowed = {p.name for p in template.parameters if p.pattern_allowed}
    issues = []
    for key, tree in trees:
        for path, holder in placeholders_in(tree):
            if holder.name not in allowed and is_pattern(path):
                issues.append(
                    ConfigIssue(
                        template.source_file or "templates",
                        template.source_line,
                        f"templates[id={template.id}].{key}",
                        f"placeholder '{holder.name}' is read as a pattern at {'.'.join(map(str, path))}, where its "
                        f"metacharacters are live; declare pattern_allowed: true on parameter '{holder.name}' "
                        "if intended",
                    )
                )
    return issues


def keys_in(tree: Any) -> Iterator[str]:
    """Every mapping key in a parsed tree (for guards that forbid operators such as `$where`)."""
    if isinstance(tree, dict):
        for key, child in tree.items():
            yield key
            yield from keys_in(child)
    elif isinstance(tree, list):
        for child in tree:
            yield from keys_in(child)


def literal_value(name: str, value: Any, dates_as_text: bool = True) -> Any:
    """A parameter value as a literal: scalars and (nested) lists of scalars; never a mapping.

    Dates become ISO text unless the source has a native date type (BSON) and asks to keep them.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise LiteralValueError(f"parameter '{name}' is not a finite number")
        return value
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat() if dates_as_text else value
    if isinstance(value, list | tuple):
        return [literal_value(name, v, dates_as_text) for v in value]
    raise LiteralValueError(f"parameter '{name}' must be a single value or a list of values")


OnValue = Callable[[Any, Path], Any]


def render(
    tree: Any, params: Mapping[str, Any], on_value: OnValue | None = None, path: Path = (), dates_as_text: bool = True
) -> Any:
    """A fresh copy of the tree with every placeholder replaced by its parameter's literal value.

    A parameter that has no value renders as null. `on_value(value, path)` lets an adapter wrap a value
    for its context (MongoDB wraps values in aggregation expressions in `$literal`).
    """
    if isinstance(tree, Placeholder):
        value = literal_value(tree.name, params.get(tree.name), dates_as_text)
        return on_value(value, path) if on_value is not None else value
    if isinstance(tree, dict):
        return {key: render(child, params, on_value, (*path, key), dates_as_text) for key, child in tree.items()}
    if isinstance(tree, list):
        return [render(child, params, on_value, (*path, i), dates_as_text) for i, child in enumerate(tree)]
    return tree


def static_value(tree: Any, where: str) -> Any:
    """Refuse placeholders in a part of a body that must be fixed by the template author."""
    found = next(placeholders_in(tree), None)
    if found is not None:
        raise ValueError(f"{where} cannot contain placeholders (found '{found[1].name}')")
    return tree
