"""Load a whole configuration (config.yaml + adapters/*.yaml + template libraries) or fail with every issue.

The result is a plain value: building live adapters from it is the runtime's job, so that a reload
can validate a new config completely before anything that serves requests is touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..adapters.base import AdapterSettings, DataAdapter, DataAdapterSettings
from ..adapters.registry import AdapterRegistry, UnknownAdapterType
from ..adapters.registry import registry as default_registry
from ..config.errors import ConfigError, ConfigIssue
from ..config.parse_cache import CacheCounts, ParseCache, parser_namespace
from ..config.validation import issues_from_validation, validate_model
from ..config.yaml_source import Path_, YamlDocument, format_path, load_yaml
from ..embedding.base import EmbeddingError
from ..embedding.factory import resolve_path
from ..embedding.model_folder import read_folder
from ..embedding.settings import EmbeddingSettings
from ..params.load_checks import LOAD_CHECKS
from ..routing.composite import CompositeAdapterSettings
from ..routing.settings import CompositeRetrievalSettings
from ..templates import Template
from ..templates.library import count_pair_issues, load_library
from .settings import AppSettings


@dataclass
class LoadedConfig:
    root: Path  # the config dir's parent: relative paths in the config are resolved against it
    config_file: Path
    app: AppSettings
    adapters: list[AdapterSettings]  # enabled adapters only, in file order
    templates: dict[str, list[Template]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)  # everything read, for the file watcher
    # each composite's effective composite_retrieval (global block + its overrides), validated once here
    retrieval: dict[str, CompositeRetrievalSettings] = field(default_factory=dict)
    cache_counts: CacheCounts | None = None  # what the load took from the config cache (None: cache off)

    def adapter(self, name: str) -> AdapterSettings | None:
        return next((a for a in self.adapters if a.name == name), None)


def resolve_config_path(path: Path) -> tuple[Path, Path]:
    """(config.yaml, adapters dir) for a config file or a config directory."""
    path = path.resolve()
    if path.is_dir():
        return path / "config.yaml", path / "adapters"
    return path, path.parent / "adapters"


def config_cache_dir(app: AppSettings, root: Path) -> Path | None:
    """The config cache's directory (None when `config_cache.enabled` is false)."""
    if not app.config_cache.enabled:
        return None
    path = Path(app.config_cache.path)
    return path if path.is_absolute() else root / path


def parse_cache_for(app: AppSettings, root: Path) -> ParseCache | None:
    """The config cache this configuration asks for (None when `config_cache.enabled` is false)."""
    directory = config_cache_dir(app, root)
    return None if directory is None else ParseCache(directory)


def body_parser(cls: type[DataAdapter], cache: ParseCache | None):
    """The adapter type's body check, answered from the cache for bodies checked before."""
    return cls.parse_body if cache is None else cache.checked(parser_namespace(cls), cls.parse_body)


def load_app_settings(path: Path) -> AppSettings:
    """Only config.yaml (no adapters, no libraries): what the server must know before it binds."""
    config_file, _ = resolve_config_path(path)
    root = config_file.parent.parent
    try:
        display = str(config_file.relative_to(root))
    except ValueError:
        display = str(config_file)
    if not config_file.exists():
        raise ConfigError([ConfigIssue(display, None, "", "config file not found")])
    return app_settings_of(load_yaml(config_file, display))


def app_settings_of(doc: YamlDocument) -> AppSettings:
    """config.yaml's settings. A file with no document at all (blank, or comments only: a truncated save)
    is an error, not every default: it would turn auth and every other setting off without a word."""
    if doc.data is None:
        empty = "the file is empty: write at least one setting, or `{}` for every default"
        raise ConfigError([ConfigIssue(doc.file, None, "", empty)])
    return validate_model(AppSettings, doc.data, doc)


@dataclass(frozen=True)
class AdapterEntry:
    """Where an adapter is written: its file (and the name errors show for it) and its key path there."""

    file: Path
    display: str
    key_path: Path_
    doc: YamlDocument

    def line_of(self, key: str) -> int | None:
        return self.doc.line_of((*self.key_path, key))


def find_adapter_entry(path: Path, name: str) -> AdapterEntry:
    """The entry of adapter `name` among the config's adapter files (fit-thresholds --write edits it)."""
    config_file, adapters_dir = resolve_config_path(path)
    root = config_file.parent.parent
    for adapter_file in sorted(adapters_dir.glob("*.yaml")) + sorted(adapters_dir.glob("*.yml")):
        display = str(adapter_file.relative_to(root)) if adapter_file.is_relative_to(root) else str(adapter_file)
        doc = load_yaml(adapter_file, display)
        entries = doc.data.get("adapters") if isinstance(doc.data, dict) else None
        for index, raw in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(raw, dict) and raw.get("name") == name:
                return AdapterEntry(adapter_file, display, ("adapters", index), doc)
    raise ValueError(f"adapter '{name}' is not in {adapters_dir}")


def load_config(path: Path, registry: AdapterRegistry = default_registry) -> LoadedConfig:
    config_file, adapters_dir = resolve_config_path(path)
    root = config_file.parent.parent
    issues: list[ConfigIssue] = []
    files: list[Path] = [config_file]

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(root))
        except ValueError:
            return str(p)

    app = AppSettings()
    cache: ParseCache | None = None  # only as config.yaml asks (not when it failed to load)
    if not config_file.exists():
        issues.append(ConfigIssue(rel(config_file), None, "", "config file not found"))
    else:
        try:
            doc = load_yaml(config_file, rel(config_file))
            app = app_settings_of(doc)
            issues.extend(model_folder_issues(app.embedding, root, doc, ()))
            cache = parse_cache_for(app, root)
        except ConfigError as exc:
            issues.extend(exc.issues)

    if cache is None:
        return _load_rest(root, config_file, adapters_dir, app, issues, files, registry, None)
    try:
        with cache.active():  # the adapters' checks (config/parse_cache.py `remembered`) read it too
            loaded = _load_rest(root, config_file, adapters_dir, app, issues, files, registry, cache)
    finally:
        cache.save(prune=True)
    loaded.cache_counts = cache.counts
    return loaded


def model_folder_issues(
    embedding: EmbeddingSettings | None, root: Path, doc: YamlDocument, key_path: Path_
) -> list[ConfigIssue]:
    """A `model_path` that names no model folder this project can run, refused at load with its file and
    line (`validate` and a reload say so, as a start would)."""
    if embedding is None or embedding.provider != "minilm" or embedding.model_path is None:
        return []
    try:
        read_folder(resolve_path(embedding.model_path, root))
    except EmbeddingError as exc:
        return [doc.issue((*key_path, "embedding", "model_path"), exc.message)]
    return []


def _load_rest(
    root: Path,
    config_file: Path,
    adapters_dir: Path,
    app: AppSettings,
    issues: list[ConfigIssue],
    files: list[Path],
    registry: AdapterRegistry,
    cache: ParseCache | None,
) -> LoadedConfig:
    """Adapter files and template libraries (read through `cache`), after config.yaml."""

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(root))
        except ValueError:
            return str(p)

    adapters: list[AdapterSettings] = []
    where: dict[str, tuple[YamlDocument, Path_]] = {}
    broken: set[str | None] = set()  # names of entries with errors of their own (reported there)
    for adapter_file in sorted(adapters_dir.glob("*.yaml")) + sorted(adapters_dir.glob("*.yml")):
        files.append(adapter_file)
        try:
            doc = load_yaml(adapter_file, rel(adapter_file), cache=cache)
        except ConfigError as exc:
            issues.extend(exc.issues)
            continue
        for settings, key_path, problems in _adapters_in(doc, registry):
            issues.extend(problems)
            if settings is None:
                broken.add(_raw_name(doc, key_path))
                continue
            if settings.name in where:
                first_doc, first_path = where[settings.name]
                issues.append(
                    doc.issue(
                        (*key_path, "name"),
                        f"duplicate adapter name '{settings.name}' "
                        f"(first defined in {first_doc.file}:{first_doc.line_of(first_path)})",
                    )
                )
                continue
            where[settings.name] = (doc, key_path)
            if settings.enabled:
                adapters.append(settings)
                if isinstance(settings, DataAdapterSettings):
                    issues.extend(model_folder_issues(settings.embedding, root, doc, key_path))

    templates: dict[str, list[Template]] = {}
    retrieval: dict[str, CompositeRetrievalSettings] = {}
    by_name = {a.name: a for a in adapters}
    for settings in adapters:
        cls = registry.get(settings.type)
        doc, key_path = where[settings.name]
        if issubclass(cls, DataAdapter) and isinstance(settings, DataAdapterSettings):
            try:
                at = (doc.file, doc.line_of((*key_path, "templates")), format_path((*key_path, "templates")))
                library = load_library(
                    list(settings.templates),
                    root,
                    cls.body_key,
                    body_parser(cls, cache),
                    settings.name,
                    at,
                    LOAD_CHECKS,
                    cache,
                )
                templates[settings.name] = library.templates
                files.extend(library.files)
                issues.extend(count_pair_issues(library.templates) + cls.check_templates(settings, library.templates))
            except ConfigError as exc:
                issues.extend(exc.issues)
        if isinstance(settings, CompositeAdapterSettings):
            for child in settings.child_adapters:
                if child in broken and child not in by_name:
                    continue  # its own errors are reported; "unknown child" would mislead
                if child not in by_name:
                    known = "disabled" if child in where else "unknown"
                    issues.append(doc.issue((*key_path, "child_adapters"), f"{known} child adapter '{child}'"))
                elif not issubclass(registry.get(by_name[child].type), DataAdapter):
                    issues.append(
                        doc.issue(
                            (*key_path, "child_adapters"), f"child '{child}' has no templates (composites cannot nest)"
                        )
                    )
            try:
                merged = app.composite_retrieval.merged(settings.overrides())
            except ValidationError as exc:
                issues.extend(issues_from_validation(exc, doc, key_path))
                continue
            provider = merged.reranking.provider
            if merged.reranking.enabled and provider not in app.rerankers:
                issues.append(
                    doc.issue(
                        (*key_path, "reranking", "provider"),
                        f"reranker '{provider}' is not in config.yaml's rerankers section",
                    )
                )
            retrieval[settings.name] = merged
    if issues:
        raise ConfigError(issues)
    return LoadedConfig(
        root=root,
        config_file=config_file,
        app=app,
        adapters=adapters,
        templates=templates,
        files=files,
        retrieval=retrieval,
    )


def _raw_name(doc: YamlDocument, key_path: Path_) -> str | None:
    """The `name:` written in an adapter entry that did not validate (None when there is none)."""
    raw = doc.data
    for key in key_path:
        try:
            raw = raw[key]
        except (KeyError, IndexError, TypeError):
            return None
    name = raw.get("name") if isinstance(raw, dict) else None
    return name if isinstance(name, str) else None


def _adapters_in(doc: YamlDocument, registry: AdapterRegistry):
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("adapters"), list):
        yield None, (), [doc.issue((), "an adapter file needs an 'adapters:' list")]
        return
    extra = [k for k in data if k != "adapters"]
    if extra:
        yield None, (), [doc.issue((extra[0],), "unknown key (an adapter file holds only 'adapters:')")]
    for index, raw in enumerate(data["adapters"]):
        path = ("adapters", index)
        if not isinstance(raw, dict):
            yield None, path, [doc.issue(path, "each adapter must be a mapping")]
            continue
        type_name = raw.get("type")
        if not isinstance(type_name, str):
            yield None, path, [doc.issue((*path, "type"), "adapter needs a 'type'")]
            continue
        try:
            cls = registry.get(type_name)
        except UnknownAdapterType:
            yield (
                None,
                path,
                [doc.issue((*path, "type"), f"unknown adapter type '{type_name}' (known: {registry.names()})")],
            )
            continue
        try:
            yield cls.settings_model.model_validate(raw), path, []
        except ValidationError as exc:
            yield None, path, issues_from_validation(exc, doc, path)
