"""Check every freshly started data adapter's templates against its live source (adapters/source_check.py),
when a runtime is built (the server's start, every reload) and for `run.py validate`.

Refusals are ConfigError issues (file:line, template, the database's message): a start fails, a reload is
refused and the last good config keeps serving, `validate` exits 1. A source that cannot be asked is
`unchecked`: a warning of the load (`/health` config.last_load.warnings, and the adapter's own health),
never an error, since a database that is down for a minute must not stop a server from starting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from contextlib import AsyncExitStack

from ..adapters.base import AdapterContext, DataAdapter, DataAdapterSettings
from ..adapters.registry import AdapterRegistry
from ..adapters.registry import registry as default_registry
from ..adapters.source_check import SourceCheck
from ..config.errors import ConfigError
from ..errors import IntentRouterError
from .loader import LoadedConfig

log = logging.getLogger("intent_router.source_checks")


async def check_sources(adapters: Iterable[DataAdapter]) -> list[SourceCheck]:
    """Ask every adapter's source side by side; each result is kept on its adapter (`source_check`, for its
    health), unchecked ones are logged, and all refusals are raised together as one ConfigError."""
    adapters = list(adapters)
    results = await asyncio.gather(*(a.check_against_source() for a in adapters))
    for adapter, result in zip(adapters, results, strict=True):
        adapter.source_check = result
        if (warning := result.warning()) is not None:
            log.warning("%s", warning)
    issues = [issue for result in results for issue in result.issues]
    if issues:
        raise ConfigError(issues)
    return results


def unchecked_warnings(adapters: Iterable[DataAdapter]) -> list[str]:
    """The load's warnings for data adapters whose templates could not be checked."""
    checks = [a.source_check for a in adapters if a.source_check is not None]
    return [warning for check in checks if (warning := check.warning()) is not None]


async def check_config_sources(config: LoadedConfig, registry: AdapterRegistry = default_registry) -> list[SourceCheck]:
    """`validate`: start each data adapter's source alone (no embedder, store or extractor: nothing is
    indexed), check its templates, close it. A source that fails to start is unchecked; a ConfigError
    (a template the source refuses, a missing credential) is raised with every issue found."""
    results: list[SourceCheck] = []
    issues = []
    async with AsyncExitStack() as stack:
        started: list[DataAdapter] = []
        for settings in config.adapters:
            cls = registry.get(settings.type)
            if not (issubclass(cls, DataAdapter) and isinstance(settings, DataAdapterSettings)):
                continue
            templates = config.templates.get(settings.name, [])
            adapter = cls(settings, AdapterContext(root=config.root, templates={t.id: t for t in templates}))
            try:
                await adapter.start()
            except ConfigError as exc:
                issues.extend(exc.issues)
                continue
            except IntentRouterError as exc:  # e.g. a database file that is not there
                reason = getattr(exc, "reason", None) or exc.message
                results.append(SourceCheck.unchecked(adapter.name, len(templates), str(reason)))
                continue
            finally:
                stack.push_async_callback(adapter.close)
            started.append(adapter)
        try:
            results += await check_sources(started)
        except ConfigError as exc:
            issues.extend(exc.issues)
    if issues:
        raise ConfigError(issues)
    return results
