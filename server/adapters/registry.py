"""Adapter types by name. Built-ins register through the same entry-point group as plug-ins."""

from __future__ import annotations

from importlib.metadata import entry_points

from .base import Adapter

ENTRY_POINT_GROUP = "intent_router.adapters"


class UnknownAdapterType(KeyError):
    pass


class AdapterRegistry:
    def __init__(self) -> None:
        self._types: dict[str, type[Adapter]] = {}
        self._loaded = False

    def register(self, type_name: str, cls: type[Adapter]) -> None:
        if not (isinstance(cls, type) and issubclass(cls, Adapter)):
            raise TypeError(f"{cls!r} is not an Adapter subclass")
        self._types[type_name] = cls

    def _load_entry_points(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name not in self._types:
                self._types[ep.name] = ep.load()

    def get(self, type_name: str) -> type[Adapter]:
        self._load_entry_points()
        try:
            return self._types[type_name]
        except KeyError:
            raise UnknownAdapterType(type_name) from None

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._types)


registry = AdapterRegistry()
