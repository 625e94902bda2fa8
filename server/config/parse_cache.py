"""What loading a config derives from file contents alone, kept on disk by content hash (issue 34).

A warm start at 5,000 templates spent 12 CPU-s loading the config, most of it parsing each template's SQL
with sqlglot and building each library's line-numbered YAML, for files that had not changed. Both depend
only on their input text (and the code that reads it), so they are kept under the data dir:
- `yaml/<sha256>.json`: a parsed document (its data and the line of every key path), keyed by the file's
  text. Documents that read environment variables or hold values JSON cannot carry exactly (dates,
  binary) are not kept: they are parsed each time.
- `checks.json`: each body check's result (the parsed body and its binds, or the error), keyed by the
  adapter type's parser and the body.
Every key also covers the versions of PyYAML, sqlglot and this cache's format, so an upgrade cannot serve
an old answer. A file that is unreadable, not JSON, of another shape or for another key is ignored (parsed
again and rewritten); files are written whole to a temporary name and renamed, so a reader never sees half
of one. A cache that cannot be written only costs the next start its time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import sqlglot
import yaml

from ..atomic_file import write_json
from .json_values import exact_json
from .parsed_body import BodyParser, ParsedBody

log = logging.getLogger(__name__)

FORMAT = 2
_VERSIONS = f"{FORMAT}\0{yaml.__version__}\0{sqlglot.__version__}"
_CHECKS = "checks.json"
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class CacheCounts:
    """What one load took from the cache and what it had to parse (tests and the benchmark read these)."""

    yaml_hits: int = 0
    yaml_parsed: int = 0
    checks_hits: int = 0
    checks_run: int = 0
    ignored_files: int = 0  # unreadable or corrupt cache files passed over


@dataclass
class ParseCache:
    directory: Path
    counts: CacheCounts = field(default_factory=CacheCounts)
    _checks: dict[str, Any] | None = None
    _used_checks: set[str] = field(default_factory=set)
    _used_yaml: set[str] = field(default_factory=set)
    _dirty: bool = False

    # --- YAML -------------------------------------------------------------------------------
    @staticmethod
    def yaml_key(text: str) -> str:
        return hashlib.sha256(f"{_VERSIONS}\0yaml\0{text}".encode()).hexdigest()

    def get_yaml(self, key: str) -> tuple[Any, dict[str, int]] | None:
        """(data, {joined key path: line}) of a document kept under `key`, or None."""
        self._used_yaml.add(key)
        entry = self._read(self.directory / "yaml" / f"{key}.json")
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("lines"), dict):
            if entry is not None:
                self.counts.ignored_files += 1
            return None
        self.counts.yaml_hits += 1
        return entry.get("data"), entry["lines"]

    def put_yaml(self, key: str, data: Any, lines: dict[str, int]) -> None:
        self.counts.yaml_parsed += 1
        self._write(self.directory / "yaml" / f"{key}.json", {"key": key, "data": data, "lines": lines})

    # --- checks -----------------------------------------------------------------------------
    def call(self, namespace: str, fn: Callable[..., Any], args: tuple, codec: Codec) -> Any:
        """`fn(*args)`, answered from the cache when these arguments were seen (the same result, or the same
        ValueError raised again); results and arguments JSON cannot carry exactly are computed each time."""
        key = self._check_key(namespace, args)
        entry = self._entries().get(key) if key is not None else None
        if isinstance(entry, dict) and isinstance(entry.get("error"), str):
            self.counts.checks_hits += 1
            self._used_checks.add(key)  # type: ignore[arg-type]
            raise ValueError(entry["error"])
        if isinstance(entry, dict) and "value" in entry:
            try:
                result = codec.decode(entry["value"])
            except (TypeError, ValueError, KeyError):
                self.counts.ignored_files += 1
            else:
                self.counts.checks_hits += 1
                self._used_checks.add(key)  # type: ignore[arg-type]
                return result
        self.counts.checks_run += 1
        try:
            result = fn(*args)
        except ValueError as exc:
            if key is not None:
                self._remember(key, {"error": str(exc)})
            raise
        encoded = codec.encode(result)
        if key is not None and exact_json(encoded):
            self._remember(key, {"value": encoded})
        return result

    def checked(self, namespace: str, parse: BodyParser) -> BodyParser:
        """`parse` (an adapter type's body check) answered from the cache for bodies it has checked before."""
        return lambda raw: self.call(namespace, parse, (raw,), _BODY)

    @contextlib.contextmanager
    def active(self) -> Iterator[ParseCache]:
        """Functions marked `remembered` use this cache while the block runs (the loader's checks)."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def save(self, prune: bool) -> None:
        """Write the checks that changed; with `prune` (a full load), keep only what this load used."""
        entries = self._entries()
        if prune:
            kept = {k: v for k, v in entries.items() if k in self._used_checks}
            self._dirty |= len(kept) != len(entries)
            entries = kept
            self._prune_yaml()
        if self._dirty:
            self._write(self.directory / _CHECKS, {"versions": _VERSIONS, "entries": entries})
            self._dirty = False

    def _entries(self) -> dict[str, Any]:
        if self._checks is None:
            stored = self._read(self.directory / _CHECKS)
            ok = isinstance(stored, dict) and stored.get("versions") == _VERSIONS
            entries = stored.get("entries") if ok else None
            if stored is not None and not isinstance(entries, dict):
                self.counts.ignored_files += 1
            self._checks = entries if isinstance(entries, dict) else {}
        return self._checks

    def _remember(self, key: str, entry: dict[str, Any]) -> None:
        self._entries()[key] = entry
        self._used_checks.add(key)
        self._dirty = True

    @staticmethod
    def _check_key(namespace: str, args: tuple) -> str | None:
        if all(type(a) is str for a in args):  # the usual case (one body): the same text, without the walk
            text = json.dumps(args)
        elif exact_json(list(args)):
            text = json.dumps(args, sort_keys=True)
        else:
            return None
        return hashlib.sha256(f"{_VERSIONS}\0check\0{namespace}\0{text}".encode()).hexdigest()

    def _prune_yaml(self) -> None:
        folder = self.directory / "yaml"
        with contextlib.suppress(OSError):
            for path in folder.glob("*.json"):
                if path.stem not in self._used_yaml:
                    path.unlink(missing_ok=True)

    # --- files -------------------------------------------------------------------------------
    def _read(self, path: Path) -> Any:
        try:
            return json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON: parse again
            log.info("config cache file %s ignored: %s", path, exc)
            self.counts.ignored_files += 1
            return None

    def _write(self, path: Path, value: Any) -> None:
        try:
            write_json(path, value)
        except (OSError, TypeError, ValueError) as exc:
            log.warning("config cache not written (%s): %s", path, exc)


@dataclass(frozen=True)
class Codec:
    """How a checked function's result is written as JSON and read back."""

    encode: Callable[[Any], Any] = lambda value: value
    decode: Callable[[Any], Any] = lambda value: value


def _decode_body(value: Any) -> ParsedBody:
    names = value["placeholders"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError("placeholders")
    return ParsedBody(value["body"], frozenset(names))


_BODY = Codec(lambda p: {"body": p.value, "placeholders": sorted(p.placeholders)}, _decode_body)
NAMES = Codec(sorted, lambda names: frozenset(map(str, names)))  # a frozenset of names
_ACTIVE: ContextVar[ParseCache | None] = ContextVar("config_cache", default=None)


def remembered(namespace: str, codec: Codec = Codec()) -> Callable[[F], F]:
    """Mark a pure check of JSON arguments: while a config load runs with a cache (`ParseCache.active`), its
    results come from the cache; elsewhere it runs as written. `namespace` names it in the keys (rename it
    when the function's meaning changes)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any) -> Any:
            cache = _ACTIVE.get()
            return fn(*args) if cache is None else cache.call(namespace, fn, args, codec)

        return inner  # type: ignore[return-value]

    return wrap


def parser_namespace(cls: type) -> str:
    """The name a body parser's results are kept under: the adapter class that owns it."""
    return f"{cls.__module__}.{cls.__qualname__}.parse_body"
