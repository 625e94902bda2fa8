"""Build live adapters from a LoadedConfig: embedders per distinct model, stores, indexes, pools.

Nothing here touches a running server: a reload builds a complete new Runtime, and only a runtime
that started cleanly is swapped in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..adapters.base import Adapter, AdapterContext
from ..adapters.registry import AdapterRegistry
from ..adapters.registry import registry as default_registry
from ..config.loader import LoadedConfig
from ..embedding.base import Embedder
from ..embedding.factory import build_embedder
from ..errors import NotFound
from ..params.factory import build_extractor
from ..stores.base import TemplateStore
from ..stores.factory import build_store
from ..stores.indexing import IndexReport, sync_store

log = logging.getLogger("intent_router.runtime")


@dataclass
class Runtime:
    config: LoadedConfig
    adapters: dict[str, Adapter] = field(default_factory=dict)
    index_reports: dict[str, IndexReport] = field(default_factory=dict)
    stores: dict[str, TemplateStore] = field(default_factory=dict)
    built_at: float = field(default_factory=time.time)
    build_seconds: float = 0.0

    def get(self, name: str) -> Adapter:
        try:
            return self.adapters[name]
        except KeyError:
            raise NotFound(f"unknown adapter '{name}'") from None

    async def close(self) -> None:
        for adapter in self.adapters.values():
            try:
                await adapter.close()
            except Exception as exc:  # closing must go on for the others
                log.warning("closing adapter %s failed: %s", adapter.name, exc)

    def describe(self) -> dict[str, Any]:
        return {name: adapter.describe() for name, adapter in self.adapters.items()}


async def build_runtime(
    config: LoadedConfig,
    previous: Runtime | None = None,
    registry: AdapterRegistry = default_registry,
    extra_context: dict[str, Any] | None = None,
    rebuild_stores: bool = False,
) -> Runtime:
    """Build and start every adapter; on any failure close what was started and re-raise."""
    started = time.perf_counter()
    runtime = Runtime(config=config)
    app = config.app
    try:
        for settings in config.adapters:
            cls = registry.get(settings.type)
            context = AdapterContext(root=config.root, lookup=runtime.get,
                                     extra={"retrieval": app.composite_retrieval, "app": app,
                                            **(extra_context or {})})
            if cls.body_key is not None:
                embedder = _embedder_for(settings, config)
                store = _store_for(settings.name, config, previous)
                templates = config.templates.get(settings.name, [])
                if rebuild_stores:
                    store.delete(list(store.template_hashes()))
                report = await asyncio.to_thread(sync_store, store, templates, embedder)
                runtime.index_reports[settings.name] = report
                runtime.stores[settings.name] = store
                context.embedder = embedder
                context.store = store
                context.templates = {t.id: t for t in templates}
                context.extractor = build_extractor(settings, app)
            adapter = cls(settings, context)
            runtime.adapters[settings.name] = adapter
        for adapter in runtime.adapters.values():
            await adapter.start()
    except BaseException:
        await runtime.close()
        raise
    runtime.build_seconds = time.perf_counter() - started
    return runtime


def _embedder_for(settings, config: LoadedConfig) -> Embedder:
    own = getattr(settings, "embedding", None)
    return build_embedder(own or config.app.embedding, config.root)


def _store_for(name: str, config: LoadedConfig, previous: Runtime | None) -> TemplateStore:
    """Reuse the previous runtime's store for this adapter when the store settings are unchanged."""
    if previous is not None and name in previous.stores and previous.config.app.store == config.app.store:
        prev_settings = previous.config.adapter(name)
        new_settings = config.adapter(name)
        if getattr(prev_settings, "embedding", None) == getattr(new_settings, "embedding", None) and \
                previous.config.app.embedding == config.app.embedding:
            return previous.stores[name]
    return build_store(config.app.store, name, config.root)
