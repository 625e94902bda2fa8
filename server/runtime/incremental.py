"""Load the config again after a change, parsing only the files whose content changed.

`load_config` parses every file; with thousands of templates that takes seconds, most of it YAML
parsing. A reload usually touches one library file. So: when config.yaml or any adapter file changed
(or one appeared or went away), the whole config is loaded with `load_config`; otherwise the adapters
are those of the last good load and only changed library files are parsed again (keyed by content
hash), with the same per-file checks (`load_library`) and the same cross-file duplicate-id check.
The result is the LoadedConfig a full load would give; unchanged adapters keep the very same
template list object, which lets the runtime build skip them.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..adapters.base import DataAdapter, DataAdapterSettings
from ..adapters.registry import AdapterRegistry
from ..adapters.registry import registry as default_registry
from ..config.errors import ConfigError, ConfigIssue
from ..config.parse_cache import ParseCache
from ..params.load_checks import LOAD_CHECKS
from ..templates import Template
from ..templates.library import count_pair_issues, expand_globs, load_library
from .loader import LoadedConfig, body_parser, load_config, parse_cache_for, resolve_config_path

# A file modified this recently before a full load began (or later) may have been parsed in another
# version than the one hashed afterwards; such files are not remembered and get parsed again next
# time. File times come from a coarse kernel clock (a few ms behind), hence the margin.
_SETTLE_NS = 100_000_000


@dataclass
class _Parsed:
    digest: str
    templates: list[Template] = field(default_factory=list)
    issues: list[ConfigIssue] = field(default_factory=list)


@dataclass
class LoadResult:
    config: LoadedConfig
    full: bool  # config.yaml / adapter files changed, everything was loaded
    files_parsed: int  # library files parsed again (all of them on a full load)
    unchanged: bool  # every file has the content of the previous good load


def file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def display_name(path: Path, root: Path) -> str:
    """How library errors and Template.source_file name a file (relative to the project root)."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


class IncrementalLoader:
    def __init__(self, config_path: Path, registry: AdapterRegistry = default_registry) -> None:
        self.config_path = config_path
        self.registry = registry
        self._base: LoadedConfig | None = None  # the last config that validated
        self._config_digests: dict[Path, str | None] = {}
        self._parsed: dict[tuple[str, Path], _Parsed] = {}  # (adapter, library file) -> parse result
        self._library_digests: dict[Path, str | None] = {}

    def config_files(self) -> list[Path]:
        config_file, adapters_dir = resolve_config_path(self.config_path)
        found = sorted(adapters_dir.glob("*.yaml")) + sorted(adapters_dir.glob("*.yml"))
        return [config_file, *found]

    def load(self) -> LoadResult:
        """The new config, or ConfigError with every issue; the last good state is kept on error."""
        digests = {p: file_digest(p) for p in self.config_files()}
        if self._base is None or digests != self._config_digests:
            return self._full(digests)
        return self._libraries_only(self._base)

    def forget(self) -> None:
        """Parse everything again next time (`reindex`)."""
        self._base = None
        self._parsed.clear()
        self._config_digests = {}
        self._library_digests = {}

    # --- full load ---------------------------------------------------------------------------
    def _full(self, digests: dict[Path, str | None]) -> LoadResult:
        started_ns = time.time_ns()
        loaded = load_config(self.config_path, self.registry)
        self._config_digests = digests
        library_digests: dict[Path, str | None] = {}
        for settings in loaded.adapters:
            templates = loaded.templates.get(settings.name)
            if templates is None or not isinstance(settings, DataAdapterSettings):
                continue
            by_file: dict[str, list[Template]] = {}
            for template in templates:
                by_file.setdefault(template.source_file, []).append(template)
            for path in expand_globs(list(settings.templates), loaded.root):
                digest = _settled_digest(path, started_ns)
                library_digests[path] = digest or "unsettled"  # never equal to a real digest
                key = (settings.name, path)
                if digest is None:
                    self._parsed.pop(key, None)
                    continue
                self._parsed[key] = _Parsed(digest, by_file.get(display_name(path, loaded.root), []))
        self._library_digests = library_digests
        self._base = loaded
        return LoadResult(loaded, full=True, files_parsed=len(library_digests), unchanged=False)

    # --- library files only ------------------------------------------------------------------
    def _libraries_only(self, base: LoadedConfig) -> LoadResult:
        cache = parse_cache_for(base.app, base.root)  # opens nothing until a file is parsed
        if cache is None:
            return self._libraries_through(base, None)
        try:
            with cache.active():
                return self._libraries_through(base, cache)
        finally:
            cache.save(prune=False)

    def _libraries_through(self, base: LoadedConfig, cache: ParseCache | None) -> LoadResult:
        issues: list[ConfigIssue] = []
        templates: dict[str, list[Template]] = {}
        files: list[Path] = [p for p in base.files if p in self._config_digests]
        library_digests: dict[Path, str | None] = {}
        parsed_count = 0
        for settings in base.adapters:
            cls = self.registry.get(settings.type)
            if not (issubclass(cls, DataAdapter) and isinstance(settings, DataAdapterSettings)):
                continue
            patterns = settings.templates
            paths = expand_globs(list(patterns), base.root)
            if not paths:  # a full load words this error with the file:line of the adapter's globs
                return self._full(self._config_digests)
            entries: list[_Parsed] = []
            for path in paths:
                digest = file_digest(path)
                library_digests[path] = digest
                key = (settings.name, path)
                entry = self._parsed.get(key)
                if entry is None or digest is None or entry.digest != digest:
                    entry = self._parse(path, digest, base.root, cls, settings.name, cache)
                    parsed_count += 1
                    if digest is not None:
                        self._parsed[key] = entry
                entries.append(entry)
                files.append(path)
            own, problems = _merge(entries, settings.name)
            issues.extend(problems)
            if not problems:  # the checks across files and those that need the settings (SQL dialect of its URL)
                issues.extend(count_pair_issues(own) + cls.check_templates(settings, own))
            previous = base.templates.get(settings.name)
            templates[settings.name] = previous if previous is not None and _same(previous, own) else own
        if issues:
            raise ConfigError(issues)
        unchanged = library_digests == self._library_digests
        self._library_digests = library_digests
        if unchanged:
            return LoadResult(base, full=False, files_parsed=parsed_count, unchanged=True)
        loaded = replace(base, templates=templates, files=files)
        self._base = loaded
        return LoadResult(loaded, full=False, files_parsed=parsed_count, unchanged=False)

    @staticmethod
    def _parse(
        path: Path, digest: str | None, root: Path, cls: type[DataAdapter], adapter: str, cache: ParseCache | None
    ) -> _Parsed:
        try:
            parse = body_parser(cls, cache)
            library = load_library([str(path)], root, cls.body_key, parse, adapter, None, LOAD_CHECKS, cache)
        except ConfigError as exc:
            return _Parsed(digest or "", issues=list(exc.issues))
        return _Parsed(digest or "", templates=library.templates)


def _merge(entries: list[_Parsed], adapter: str) -> tuple[list[Template], list[ConfigIssue]]:
    """Templates of one adapter in file order; ids must be unique across its files (as load_library checks)."""
    issues: list[ConfigIssue] = []
    templates: list[Template] = []
    seen: dict[str, str] = {}
    for entry in entries:
        issues.extend(entry.issues)
        for template in entry.templates:
            if template.id in seen:
                issues.append(
                    ConfigIssue(
                        template.source_file,
                        template.source_line,
                        f"templates[id={template.id}]",
                        f"duplicate template id in adapter '{adapter}' (first defined in {seen[template.id]})",
                    )
                )
                continue
            seen[template.id] = f"{template.source_file}:{template.source_line}"
            templates.append(template)
    return templates, issues


def _same(a: list[Template], b: list[Template]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _settled_digest(path: Path, started_ns: int) -> str | None:
    """The file's hash if it was last modified well before the load began and not during hashing."""
    try:
        before = path.stat()
    except OSError:
        return None
    digest = file_digest(path)
    try:
        after = path.stat()
    except OSError:
        return None
    if before.st_mtime_ns != after.st_mtime_ns or after.st_mtime_ns >= started_ns - _SETTLE_NS:
        return None
    return digest
