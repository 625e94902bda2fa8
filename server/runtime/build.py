"""Build live adapters from a LoadedConfig: embedders per distinct model, stores, indexes, pools.

Nothing here touches a running server: a reload builds a complete new Runtime, and only a runtime
that started cleanly is swapped in. A reload reuses what did not change from the previous runtime
(embedders, stores, whole adapters) so that its cost follows the size of the change, not the size
of the config; in-memory stores are copied on write, so requests still running on the previous
runtime never see a half-updated store.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..adapters.accepted_bodies import AcceptedBodies
from ..adapters.base import Adapter, AdapterContext, AdapterSettings, DataAdapter, DataAdapterSettings
from ..adapters.registry import AdapterRegistry
from ..adapters.registry import registry as default_registry
from ..adapters.result_cache import ResultCache
from ..adapters.result_cache_factory import build_result_cache
from ..config.errors import ConfigError, ConfigIssue
from ..conversations import SessionSettings, SessionStore, build_session_store
from ..embedding.base import Embedder
from ..embedding.cache import CachedEmbedder
from ..embedding.factory import build_embedder, settings_key
from ..embedding.settings import EmbeddingSettings
from ..errors import NotFound
from ..intent.fitted_models import FittedModels
from ..params.base import ParameterExtractor
from ..params.factory import build_extractor
from ..params.learned.store import LearnedModels
from ..rerankers.shared_cache import SharedRerankCache, build_shared_rerank_cache
from ..routing.composite import CompositeAdapter, CompositeAdapterSettings, CompositeContext
from ..routing.routable import Routable, RoutingSource
from ..shared_redis import SharedState
from ..stores.base import TemplateStore
from ..stores.factory import build_store
from ..stores.indexing import IndexReport, index_digests, sync_store
from ..stores.memory import MemoryTemplateStore
from ..stores.snapshot import StoreSnapshots
from ..templates import Template
from .encoder_check import encoder_warnings
from .loader import LoadedConfig, config_cache_dir
from .source_checks import check_sources, unchecked_warnings

log = logging.getLogger("intent_router.runtime")

T = TypeVar("T")
# wraps a freshly built data adapter with its embedder, store and extractor for routing
SourceFactory = Callable[[DataAdapter, Embedder, TemplateStore, ParameterExtractor | None], RoutingSource]


@dataclass
class Runtime:
    config: LoadedConfig
    adapters: dict[str, Routable] = field(default_factory=dict)  # data sources (RoutingSource), composites
    index_reports: dict[str, IndexReport] = field(default_factory=dict)
    stores: dict[str, TemplateStore] = field(default_factory=dict)
    embedders: dict[str, Embedder] = field(default_factory=dict)  # by embedding settings
    reused_adapters: set[str] = field(default_factory=set)  # carried over unchanged from the previous runtime
    built_at: float = field(default_factory=time.time)
    build_seconds: float = 0.0
    # seconds per phase of the build (embedders, template stores, adapters' start), for the start log
    phases: dict[str, float] = field(default_factory=dict)
    in_flight: int = 0  # requests currently using this runtime (the holder counts them)
    fitted_models: FittedModels = field(default_factory=FittedModels)  # shared with later runtimes by the holder
    learned_models: LearnedModels = field(default_factory=LearnedModels)  # parameter extractors' fits, carried
    # conversation state; carried over by reloads that keep the `sessions:` block, so chats survive them
    sessions: SessionStore = field(default_factory=lambda: build_session_store(SessionSettings()))
    result_cache: ResultCache | None = None
    owns_result_cache: bool = False  # built for this runtime alone (no holder): closed with it
    rerank_cache: SharedRerankCache | None = None  # rerank_cache.backend redis; carried over like sessions

    def get(self, name: str) -> Routable:
        try:
            return self.adapters[name]
        except KeyError:
            raise NotFound(f"unknown adapter '{name}'") from None

    def shared_engines(self) -> dict[str, SharedState]:
        """What this runtime shares with other replicas, by its name under /health `shared`."""
        engines: dict[str, SharedState | None] = {
            "sessions": self.sessions,
            "result_cache": self.result_cache,
            "rerank_cache": self.rerank_cache,
        }
        embedding = [e for e in self.embedders.values() if isinstance(e, CachedEmbedder) and e.shared]
        for embedder in embedding:
            name = "embedding_cache" if len(embedding) == 1 else f"embedding_cache {embedder.model_id}"
            engines[name] = embedder.shared
        return {name: engine for name, engine in engines.items() if engine is not None}

    def resources(self) -> list[object]:
        return [
            *self.adapters.values(),
            *self.stores.values(),
            *self.embedders.values(),
            self.sessions,
            self.rerank_cache,
        ]

    async def close(self, keep: Iterable[Runtime] = (), purge_removed: bool = False) -> None:
        """Close what no runtime in `keep` still uses. With `purge_removed`, persistent stores of adapters
        that no kept runtime has any more are emptied (their templates left the config)."""
        keep = list(keep)
        kept = {id(obj) for runtime in keep for obj in runtime.resources()}
        names = {name for runtime in keep for name in runtime.adapters}
        for adapter in self.adapters.values():
            if id(adapter) not in kept:
                try:
                    await adapter.close()
                except Exception as exc:  # closing must go on for the others
                    log.warning("closing adapter %s failed: %s", adapter.name, exc)
        for name, store in self.stores.items():
            if id(store) in kept:
                continue
            try:
                if purge_removed and name not in names and self.config.app.store.backend != "memory":
                    await asyncio.to_thread(store.delete, list(store.template_hashes()))
                store.close()
            except Exception as exc:
                log.warning("closing the template store of %s failed: %s", name, exc)
        if self.owns_result_cache and self.result_cache is not None:
            await self.result_cache.close()
        for embedder in self.embedders.values():
            if id(embedder) not in kept:
                try:
                    await embedder.close()
                except Exception as exc:
                    log.warning("closing embedder %s failed: %s", embedder, exc)
        if id(self.sessions) not in kept:
            try:
                await self.sessions.close()
            except Exception as exc:
                log.warning("closing the session store failed: %s", exc)
        if self.rerank_cache is not None and id(self.rerank_cache) not in kept:
            await self.rerank_cache.close()
        await asyncio.to_thread(self.fitted_models.flush)  # fits still being written reach the directory

    def describe(self) -> dict[str, Any]:
        return {name: adapter.describe() for name, adapter in self.adapters.items()}

    def warnings(self) -> list[str]:
        """What a load of this runtime reports as worth fixing: templates not checked against a source that
        was down (adapters/source_check.py), a tuned encoder whose templates changed (encoder_check.py)."""
        return unchecked_warnings(self.data_adapters()) + encoder_warnings(self.config)

    def data_adapters(self) -> list[DataAdapter]:
        """The data adapters of this runtime's sources, in config order."""
        return [s.adapter for s in self.adapters.values() if isinstance(s, RoutingSource)]

    def default_adapter(self) -> Routable:
        """The adapter a request that names none is asked: `server.default_adapter`, else the first
        composite, else the first adapter."""
        configured = self.config.app.server.default_adapter
        if configured:
            return self.get(configured)
        composites = [a for a in self.adapters.values() if isinstance(a, CompositeAdapter)]
        if composites:
            return composites[0]
        if self.adapters:
            return next(iter(self.adapters.values()))
        raise NotFound("no adapters are configured")


async def build_runtime(
    config: LoadedConfig,
    previous: Runtime | None = None,
    registry: AdapterRegistry = default_registry,
    fitted_models: FittedModels | None = None,
    result_cache: ResultCache | None = None,
    rebuild_stores: bool = False,
    make_source: SourceFactory = RoutingSource,
) -> Runtime:
    """Build and start every adapter; on any failure close what this build started and re-raise.

    `previous` is only read: its objects are shared with the new runtime where nothing changed.
    `fitted_models` is the holder's cache of intent models, kept across reloads.
    `rebuild_stores` empties every store and indexes all templates again (the `reindex` command).
    `make_source` wraps each data adapter for routing (a test type may search its store differently).
    """
    started = time.perf_counter()
    runtime = Runtime(
        config=config,
        sessions=_carried(config, previous, "sessions", build_session_store),
        rerank_cache=_carried(config, previous, "rerank_cache", build_shared_rerank_cache),
    )
    if previous is not None:
        runtime.learned_models = previous.learned_models
    if rebuild_stores:
        previous = None
    app = config.app
    fresh: list[Routable] = []
    try:
        models = runtime.fitted_models = fitted_models if fitted_models is not None else FittedModels()
        if result_cache is None:
            result_cache = build_result_cache(app.result_cache)
            runtime.owns_result_cache = result_cache is not None
        runtime.result_cache = result_cache
        accepted = AcceptedBodies(config_cache_dir(app, config.root))
        for settings in config.adapters:
            cls = registry.get(settings.type)
            built: Routable
            if issubclass(cls, DataAdapter):
                t = time.perf_counter()
                embedder = _embedder_for(settings, runtime, previous)
                templates = config.templates.get(settings.name, [])
                t = _phase(runtime, "embedders", t)
                store, report = await asyncio.to_thread(
                    _index, settings.name, templates, embedder, config, previous, rebuild_stores
                )
                _phase(runtime, "template_stores", t)
                runtime.index_reports[settings.name] = report
                runtime.stores[settings.name] = store
                reusable = _reusable_adapter(settings, cls, store, embedder, templates, config, previous)
                if reusable is not None:
                    runtime.adapters[settings.name] = reusable
                    runtime.reused_adapters.add(settings.name)
                    continue
                context = AdapterContext(
                    root=config.root,
                    templates={t.id: t for t in templates},
                    result_cache=result_cache,
                    result_cache_settings=app.result_cache,
                    accepted_bodies=accepted,
                )
                extractor = build_extractor(settings, app, learned_models=runtime.learned_models, root=config.root)
                built = make_source(cls(settings, context), embedder, store, extractor)
            elif issubclass(cls, CompositeAdapter):
                assert isinstance(settings, CompositeAdapterSettings)
                retrieval = config.retrieval.get(settings.name)
                if retrieval is None:
                    raise ValueError(f"composite {settings.name}: no retrieval settings (not built by the loader)")
                composite_context = CompositeContext(
                    root=config.root,
                    lookup=runtime.get,  # its children by name, as they are now
                    retrieval=retrieval,
                    fitted_models=models,
                    rerankers=app.rerankers,
                    shared_rerank_cache=runtime.rerank_cache,
                )
                built = cls(settings, composite_context)
            else:
                raise TypeError(f"adapter type {settings.type}: {cls.__name__} is not a data adapter or a composite")
            runtime.adapters[settings.name] = built
            fresh.append(built)
        if previous is None and app.store.backend == "memory":  # a start: the files of removed adapters go
            _snapshots(config).keep_only(list(runtime.stores))
        t = time.perf_counter()
        # data adapters open their sources side by side (each in a thread); composites start after
        # them, since they read their children's stores and embedders
        started_data = await asyncio.gather(
            *(a.start() for a in fresh if isinstance(a, RoutingSource)), return_exceptions=True
        )
        failed = next((r for r in started_data if isinstance(r, BaseException)), None)
        if failed is not None:  # raised once every start has finished: none is left running while we close
            raise failed
        t = _phase(runtime, "data_adapters_start", t)
        data = [a for a in fresh if isinstance(a, RoutingSource)]
        # templates checked against their live sources, then the extractors: every refusal reported together
        issues = await _issues_of(check_sources(s.adapter for s in data))
        # a build that checked every data adapter keeps only the acceptances it used
        await asyncio.to_thread(accepted.save, prune=not runtime.reused_adapters)
        t = _phase(runtime, "source_checks", t)
        issues += await _issues_of(_prepare_extractors(data))
        t = _phase(runtime, "extractors_prepare", t)
        if issues:
            raise ConfigError(issues)
        for adapter in fresh:
            if not isinstance(adapter, RoutingSource):
                await adapter.start()
        _phase(runtime, "composites_start", t)
    except BaseException:
        await runtime.close(keep=[previous] if previous is not None else [])
        raise
    runtime.build_seconds = time.perf_counter() - started
    return runtime


async def _prepare_extractors(adapters: list[RoutingSource]) -> None:
    """Once their sources are open, the extractors of freshly built data adapters get ready (values_from
    lists are fetched now, learned extractors loaded or fitted): side by side, and every adapter's
    ConfigError issues reported together.
    A reused adapter keeps what its extractor already holds."""
    ready = [a for a in adapters if a.has_extractor]
    results = await asyncio.gather(*(a.extractor.prepare(a.templates.values()) for a in ready), return_exceptions=True)
    failed = next((r for r in results if isinstance(r, BaseException) and not isinstance(r, ConfigError)), None)
    if failed is not None:
        raise failed
    issues = [issue for r in results if isinstance(r, ConfigError) for issue in r.issues]
    if issues:
        raise ConfigError(issues)


async def _issues_of(step: Awaitable[object]) -> list[ConfigIssue]:
    """The issues of a step's ConfigError (none when it passed); any other failure propagates."""
    try:
        await step
    except ConfigError as exc:
        return list(exc.issues)
    return []


def _phase(runtime: Runtime, name: str, since: float) -> float:
    """Add the seconds since `since` to a phase of the build; returns now."""
    now = time.perf_counter()
    runtime.phases[name] = runtime.phases.get(name, 0.0) + now - since
    return now


def _carried(config: LoadedConfig, previous: Runtime | None, block: str, build: Callable[[Any], T]) -> T:
    """What the previous runtime built from config.yaml's `block` (its field of the same name), kept
    while the block is unchanged (conversations go on, connections stay open); else built anew."""
    if previous is not None and getattr(previous.config.app, block) == getattr(config.app, block):
        carried: T = getattr(previous, block)
        return carried
    return build(getattr(config.app, block))


def _embedding_key(settings: EmbeddingSettings, config: LoadedConfig) -> str:
    return settings_key(settings, config.root)


def _embedder_for(settings: AdapterSettings, runtime: Runtime, previous: Runtime | None) -> Embedder:
    """One embedder per distinct embedding settings, carried over from the previous runtime when the
    same (its in-memory cache of recent questions survives the reload)."""
    config = runtime.config
    own = settings.embedding if isinstance(settings, DataAdapterSettings) else None
    key = _embedding_key(own or config.app.embedding, config)
    if key not in runtime.embedders:
        carried = previous.embedders.get(key) if previous is not None else None
        runtime.embedders[key] = carried or build_embedder(own or config.app.embedding, config.root)
    return runtime.embedders[key]


def _index(
    name: str,
    templates: list[Template],
    embedder: Embedder,
    config: LoadedConfig,
    previous: Runtime | None,
    rebuild: bool,
) -> tuple[TemplateStore, IndexReport]:
    """The store for one adapter, brought up to date with as little work as the change needs."""
    old = _previous_store(name, config, previous)
    donors = list(previous.stores.values()) if previous is not None else []
    snapshots = _snapshots(config)
    if old is None:
        store = build_store(config.app.store, name, config.root)
        if rebuild:
            store.delete(list(store.template_hashes()))
        if (
            not rebuild
            and isinstance(store, MemoryTemplateStore)
            and snapshots.restore(name, store, templates, index_digests(templates, embedder), embedder.dim)
        ):
            report = IndexReport(added=[t.id for t in templates])
        else:
            report = sync_store(store, templates, embedder, donors)
            if isinstance(store, MemoryTemplateStore):
                snapshots.save(name, store)
    elif (
        previous is not None
        and previous.config.templates.get(name) is templates
        and _same_embedder(previous.adapters[name], embedder)
    ):
        return old, IndexReport(unchanged=len(templates))  # the loader handed over the very same list
    else:
        stored = old.template_hashes()
        if stored == index_digests(templates, embedder):
            return old, IndexReport(unchanged=len(templates))
        if config.app.store.backend == "memory":
            # copy on write: the running runtime keeps searching the old store untouched
            store = build_store(config.app.store, name, config.root)
            report = sync_store(store, templates, embedder, donors, baseline=stored)
            if isinstance(store, MemoryTemplateStore):
                snapshots.save(name, store)
        else:
            # a persistent store is updated in place; the router ignores hits for templates it does not know
            store = old
            report = sync_store(store, templates, embedder, donors)
    if config.app.store.backend == "memory":
        _warm(store, embedder, searched_alone=name not in _stacked_children(config))
    return store, report


def _snapshots(config: LoadedConfig) -> StoreSnapshots:
    """The in-memory stores' files, in the config cache's `stores/` folder (none when the cache is off)."""
    directory = config_cache_dir(config.app, config.root)
    return StoreSnapshots(directory / "stores" if directory is not None else None)


def _stacked_children(config: LoadedConfig) -> set[str]:
    """Adapters some composite searches through its stacked view (their own views are built on demand)."""
    return {c for a in config.adapters if isinstance(a, CompositeAdapterSettings) for c in a.child_adapters}


def _previous_store(name: str, config: LoadedConfig, previous: Runtime | None) -> TemplateStore | None:
    if previous is None or name not in previous.stores:
        return None
    if previous.config.app.store != config.app.store or previous.config.root != config.root:
        return None
    return previous.stores[name]


def _warm(store: TemplateStore, embedder: Embedder, searched_alone: bool = True) -> None:
    """Pack the in-memory store now, off the request path, not on the first question after a reload; a
    store searched alone also builds its own view (its int8 pass when large). A composite's child is
    searched through the composite's stacked view (built by the composite's start from this pack): its
    own view, a second int8 pass over the same vectors, waits until someone asks that child alone."""
    if not store.count_templates():
        return
    if isinstance(store, MemoryTemplateStore) and not searched_alone:
        store.packed()
    else:
        store.search(np.zeros(embedder.dim, dtype=np.float32), 1)


def _reusable_adapter(
    settings: AdapterSettings,
    cls: type[Adapter],
    store: TemplateStore,
    embedder: Embedder,
    templates: list[Template],
    config: LoadedConfig,
    previous: Runtime | None,
) -> RoutingSource | None:
    """The previous runtime's source when nothing it depends on changed (no new pool, no re-check)."""
    if previous is None:
        return None
    old = previous.adapters.get(settings.name)
    if not isinstance(old, RoutingSource) or type(old.adapter) is not cls or old.settings != settings:
        return None
    if previous.config.app != config.app or old.store is not store or old.embedder is not embedder:
        return None
    before = previous.config.templates.get(settings.name, [])
    if before is not templates and before != templates:
        return None
    return old


def _same_embedder(previous: Routable, embedder: Embedder) -> bool:
    return isinstance(previous, RoutingSource) and previous.embedder is embedder
