"""Watch the config and template files and reload when they change (debounced).

Editors save in bursts (write a temp file, rename, touch); watchfiles groups a burst into one batch,
and one batch is one reload. Directories are watched rather than files, so that a save that replaces
the file (rename over it) and a new file that a glob would match are both seen. The set of
directories follows the serving config and is recomputed after every reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web
from watchfiles import Change, DefaultFilter, awatch

from .holder import LoadStatus, RuntimeHolder

log = logging.getLogger("intent_router.watch")

_SUFFIXES = (".yaml", ".yml")


class YamlFilter(DefaultFilter):
    """Only YAML files count (not the demo databases, journals or editor swap files next to them)."""

    def __call__(self, change: Change, path: str) -> bool:
        return path.endswith(_SUFFIXES) and super().__call__(change, path)


class ConfigWatcher:
    def __init__(
        self, holder: RuntimeHolder, debounce_ms: int = 1000, step_ms: int = 50, force_polling: bool | None = None
    ) -> None:
        self.holder = holder
        self.debounce_ms = debounce_ms  # longest a burst of changes is collected before a reload
        self.step_ms = step_ms  # quiet time that ends a burst
        self.force_polling = force_polling
        self.reloads = 0
        self.last_status: LoadStatus | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.watching: list[Path] = []
        self.ready = asyncio.Event()  # set once the first watch is in place

    def start(self) -> None:
        if self._task is None:
            self._stop.clear()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="config-watcher")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            task, self._task = self._task, None
            try:
                await asyncio.wait_for(task, 5.0)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _run(self) -> None:
        while not self._stop.is_set():
            paths = self.holder.watch_paths()
            self.watching = paths
            try:
                await self._watch(paths)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a watched directory vanished, inotify limits, ...: retry shortly
                log.warning("file watching failed (%s); retrying", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 1.0)

    async def _watch(self, paths: list[Path]) -> None:
        """Reload on every batch until the directories to watch change or we are stopped."""
        if not paths:
            await self._stop.wait()
            return
        changes_iter = awatch(
            *paths,
            watch_filter=YamlFilter(),
            debounce=self.debounce_ms,
            step=self.step_ms,
            stop_event=self._stop,
            force_polling=self.force_polling,
            yield_on_timeout=True,
            rust_timeout=500,
        )
        async with contextlib.aclosing(changes_iter) as batches:
            async for changes in batches:
                self.ready.set()
                if not changes:
                    continue
                log.info("config files changed: %s", sorted({Path(p).name for _, p in changes}))
                self.last_status = await self.holder.reload(trigger="watch")
                self.reloads += 1
                if self.holder.watch_paths() != paths:
                    return


WATCHER = web.AppKey("config_watcher", ConfigWatcher)


def attach_watcher(app: web.Application, holder: RuntimeHolder, **options) -> ConfigWatcher:
    """Start watching when the app starts and stop when it shuts down."""
    watcher = ConfigWatcher(holder, **options)
    app[WATCHER] = watcher

    async def lifecycle(_: web.Application) -> AsyncIterator[None]:
        watcher.start()
        yield
        await watcher.stop()

    app.cleanup_ctx.append(lifecycle)
    return watcher
