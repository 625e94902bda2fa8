"""Adapter types by name. Built-ins register through the same entry-point group as plug-ins.

Entry points are loaded lazily, one type at a time, so a plug-in that fails to import only breaks
configs that use it.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from .base import Adapter

ENTRY_POINT_GROUP = "intent_router.adapters"


class UnknownAdapterType(KeyError):
    pass


class AdapterRegistry:
    def __init__(self) -> None:
        self._types: dict[str, type[Adapter]] = {}
        self._entry_points: dict[str, EntryPoint] | None = None

    def register(self, type_name: str, cls: type[Adapter]) -> None:
        if not (isinstance(cls, type) and issubclass(cls, Adapter)):
            raise TypeError(f"{cls!r} is not an Adapter subclass")
        self._types[type_name] = cls

    def _eps(self) -> dict[str, EntryPoint]:
        if self._entry_points is None:
            self._entry_points = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        return self._entry_points

    def get(self, type_name: str) -> type[Adapter]:
        if type_name not in self._types:
            ep = self._eps().get(type_name)
            if ep is None:
                raise UnknownAdapterType(type_name)
            self.register(type_name, ep.load())
        return self._types[type_name]

    def names(self) -> list[str]:
        return sorted(set(self._types) | set(self._eps()))


registry = AdapterRegistry()
