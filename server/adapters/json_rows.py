"""Map a JSON reply (HTTP, GraphQL, Elasticsearch) to rows: find the items, pick and rename fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from .row_values import to_json_value

_MISSING = object()


class ResponseMapping(BaseModel):
    """`items_path` is a dotted path to the list of items (empty: the whole reply); `fields` picks columns:
    a list of dotted paths, or a mapping of column name to dotted path. Without `fields`, every key of an
    item becomes a column."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    items_path: str = ""
    fields: list[str] | dict[str, str] | None = None

    @field_validator("items_path")
    @classmethod
    def _path_shape(cls, value: str) -> str:
        if value and any(not part for part in value.split(".")):
            raise ValueError("items_path is a dotted path such as 'data.items' (no empty segments)")
        return value

    def columns_spec(self) -> dict[str, str] | None:
        if self.fields is None:
            return None
        if isinstance(self.fields, list):
            return {f: f for f in self.fields}
        return dict(self.fields)


class MissingItems(LookupError):
    """The reply has nothing at `items_path`."""


def lookup(doc: Any, path: str) -> Any:
    """Follow a dotted path through mappings (and list indices); `_MISSING` sentinel if absent."""
    node = doc
    for part in path.split(".") if path else []:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def extract_items(doc: Any, items_path: str) -> list[Any]:
    found = lookup(doc, items_path)
    if found is _MISSING:
        raise MissingItems(items_path or "<root>")
    if found is None:
        return []
    return found if isinstance(found, list) else [found]


def map_rows(items: list[Any], mapping: ResponseMapping, cap: int) -> tuple[list[dict[str, Any]], list[str], bool]:
    """(rows, columns, truncated) with at most `cap` rows; values made JSON-clean."""
    spec = mapping.columns_spec()
    rows: list[dict[str, Any]] = []
    columns: dict[str, None] = {}
    for item in items[:cap]:
        if spec is None:
            row = (
                {str(k): to_json_value(v) for k, v in item.items()}
                if isinstance(item, dict)
                else {"value": to_json_value(item)}
            )
        else:
            row = {}
            for column, path in spec.items():
                value = lookup(item, path)
                row[column] = None if value is _MISSING else to_json_value(value)
        for column in row:
            columns.setdefault(column, None)
        rows.append(row)
    if spec is not None:
        columns = dict.fromkeys(spec)
    return rows, list(columns), len(items) > cap
