"""Render rows as the `content` text a chat backend can show or hand to an LLM."""

from __future__ import annotations

from typing import Any

from ..params.base import Extraction
from ..params.extractor import left_at_default
from ..params.roles import Role, role_of
from ..routing.ranking_ends import RankingEnd
from ..templates import ParameterType, Template

MAX_TABLE_ROWS = 50


def row_count_text(count: int, truncated: bool, total: int | None = None) -> str:
    """How many rows an answer holds, in words a reader (or an LLM) cannot take for the total when the
    answer was cut: "the first 100 of more than 100 rows" (or "of 412 rows" when they were counted),
    never "100 rows"."""
    if truncated:
        return f"the first {count} of {'more than ' + str(count) if total is None else total} rows"
    return f"{count} row{'s' if count != 1 else ''}"


def render_content(template: Template, rows: list[dict[str, Any]], truncated: bool, total: int | None = None) -> str:
    if not rows:
        return f"{template.description}: no results."
    if template.result_format == "summary" and len(rows) == 1 and not truncated:
        parts = [f"{k.replace('_', ' ')}: {'none' if v is None else _fmt(v)}" for k, v in rows[0].items()]
        return f"{template.description}. " + "; ".join(parts) + "."
    columns = list(rows[0].keys())
    lines = [
        f"{template.description} ({row_count_text(len(rows), truncated, total)}):",
        " | ".join(columns),
        " | ".join("---" for _ in columns),
    ]
    for row in rows[:MAX_TABLE_ROWS]:
        lines.append(" | ".join(_fmt(row.get(c)) for c in columns))
    if len(rows) > MAX_TABLE_ROWS:
        lines.append(f"... {len(rows) - MAX_TABLE_ROWS} more rows")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 1000 else f"{value:.4g}"
    return "" if value is None else str(value)


# defaults that bound or cut an answer ('no lower price', 'open-ended', 'the first 50') rather than choose
# which data it is about: not worth a line
_BOUNDS = frozenset({Role.LIMIT, Role.LOWER, Role.UPPER, Role.START, Role.END, Role.QUANTITY})


def assumed_line(template: Template, values: dict[str, Any], extraction: Extraction) -> str | None:
    """The line an answer's content adds for the defaults that chose what it is about ("Assumed (not in the
    question): year 2025."), so a reader sees the figure is 2025's and can ask for another; None when none did.
    Read from the values (params/extractor.py `left_at_default`), so a follow-up that keeps a default says it too."""
    specs = {p.name: p for p in template.parameters}
    at_default = left_at_default(template, values, extraction)
    said = [
        f"{name} {values[name]}"
        for name, spec in specs.items()
        if name in at_default
        and values.get(name) is not None
        and spec.type is not ParameterType.BOOLEAN
        and role_of(spec) not in _BOUNDS
    ]
    return f"Assumed (not in the question): {', '.join(said)}." if said else None


def ranking_line(end: RankingEnd | None) -> str | None:
    """The line an answer adds when the template that would have run ranks from the other end of what the
    question asks for (routing/ranking_ends.py), so the reader knows why another answered, or none did."""
    if end is None or not end.would_have_run:
        return None
    other = "lowest" if end.asked == "highest" else "highest"
    return f"Not run: '{end.refused[0]}' ranks from the {other}, and the question asks for the {end.asked}."
