"""A fetched `values_from` list: the values (first column) and the other names they go by (second column).

`SELECT name, code FROM airlines` lists 'US Airways' with the code 'US': the code is matched in the
question and fills the name. A name or alias is kept once (case aside). An alias that two values share
names neither (matching it would be a guess between them), and an alias that is itself a listed value
stands for that value, so both are dropped from the aliases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class ValueList:
    values: tuple[Any, ...]
    aliases: tuple[tuple[str, Any], ...] = ()  # (alias or code as listed, the value it names)

    @classmethod
    def of(cls, values: Iterable[Any], aliases: Mapping[str, Any] | None = None) -> ValueList:
        """A list written by hand (tests, tools): values once each, aliases as given."""
        return cls.from_pairs([(v, None) for v in values] + [(v, a) for a, v in (aliases or {}).items()])

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> ValueList:
        """Rows of a values query: the first column is the value, the second (if any) an alias or code.
        Documents (MongoDB, JSON APIs) may lack the first column: such rows list nothing."""
        first = columns[0] if columns else None
        second = columns[1] if len(columns) > 1 else None
        pairs = []
        for row in rows:
            if not row:
                continue
            value = row.get(first) if first is not None else next(iter(row.values()))
            pairs.append((value, row.get(second) if second is not None else None))
        return cls.from_pairs(pairs)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[Any, Any]]) -> ValueList:
        values: dict[str, Any] = {}  # casefolded -> the value as first listed
        named: dict[str, tuple[str, set[str]]] = {}  # casefolded alias -> (alias as listed, values it names)
        for value, alias in pairs:
            if value is None or not str(value).strip():
                continue
            key = str(value).casefold()
            values.setdefault(key, value)
            if alias is not None and str(alias).strip():
                text = str(alias).strip()
                named.setdefault(text.casefold(), (text, set()))[1].add(key)
        aliases = tuple(
            (text, values[next(iter(owners))])
            for folded, (text, owners) in named.items()
            if len(owners) == 1 and folded not in values
        )
        return cls(tuple(values.values()), aliases)

    @cached_property
    def _by_name(self) -> dict[str, Any]:
        out = {str(alias).casefold(): value for alias, value in self.aliases}
        out.update((str(v).casefold(), v) for v in self.values)
        return out

    def canonical(self, text: Any) -> Any | None:
        """The listed value that `text` names (a value or an alias, case aside), or None."""
        return self._by_name.get(str(text).casefold())

    def __len__(self) -> int:
        return len(self.values)
