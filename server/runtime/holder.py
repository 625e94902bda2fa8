"""Holds the current Runtime and swaps in a new one atomically on reload.

A reload loads and builds a complete new runtime off the request path; only when that succeeds is it
swapped in. Requests that already hold the old runtime finish on it; it is closed after they drain.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.errors import ConfigError
from ..config.loader import load_config
from .build import Runtime, build_runtime

log = logging.getLogger("intent_router.reload")


@dataclass
class LoadStatus:
    ok: bool
    at: float
    seconds: float
    errors: list[dict[str, Any]] = field(default_factory=list)
    changes: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "at": self.at, "seconds": round(self.seconds, 4), "errors": self.errors,
                "changes": self.changes}


class RuntimeHolder:
    def __init__(self, config_path: Path, extra_context: dict[str, Any] | None = None) -> None:
        self.config_path = config_path
        self.extra_context = extra_context or {}
        self._current: Runtime | None = None
        self._in_flight: dict[int, int] = {}
        self._lock = asyncio.Lock()
        self.last_load: LoadStatus | None = None
        self.last_good_load: LoadStatus | None = None

    @property
    def current(self) -> Runtime:
        if self._current is None:
            raise RuntimeError("no configuration loaded")
        return self._current

    async def start(self) -> Runtime:
        """First load: errors propagate (a server must not start on a broken config)."""
        started = time.perf_counter()
        runtime = await build_runtime(load_config(self.config_path), extra_context=self.extra_context)
        self._current = runtime
        self.last_load = self.last_good_load = LoadStatus(True, time.time(), time.perf_counter() - started,
                                                          changes=_changes(None, runtime))
        return runtime

    async def reload(self) -> LoadStatus:
        async with self._lock:
            started = time.perf_counter()
            old = self._current
            try:
                loaded = await asyncio.to_thread(load_config, self.config_path)
                new = await build_runtime(loaded, previous=old, extra_context=self.extra_context)
            except ConfigError as exc:
                log.error("config reload rejected; keeping the last good config:\n%s", exc)
                self.last_load = LoadStatus(False, time.time(), time.perf_counter() - started, exc.to_json())
                return self.last_load
            except Exception as exc:
                log.exception("config reload failed while starting adapters; keeping the last good config")
                message = getattr(exc, "message", None) or f"adapters failed to start: {type(exc).__name__}"
                self.last_load = LoadStatus(False, time.time(), time.perf_counter() - started,
                                            [{"file": None, "line": None, "key": "", "message": message}])
                return self.last_load
            self._current = new
            self.last_load = self.last_good_load = LoadStatus(True, time.time(), time.perf_counter() - started,
                                                              changes=_changes(old, new))
            if old is not None:
                asyncio.get_running_loop().create_task(self._close_when_drained(old))
            return self.last_load

    def acquire(self) -> Runtime:
        runtime = self.current
        self._in_flight[id(runtime)] = self._in_flight.get(id(runtime), 0) + 1
        return runtime

    def release(self, runtime: Runtime) -> None:
        self._in_flight[id(runtime)] -= 1

    async def _close_when_drained(self, runtime: Runtime, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while self._in_flight.get(id(runtime), 0) > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self._in_flight.pop(id(runtime), None)
        await runtime.close()

    async def close(self) -> None:
        if self._current is not None:
            await self._current.close()
            self._current = None


def _changes(old: Runtime | None, new: Runtime) -> dict[str, Any]:
    old_settings = {a.name: a for a in old.config.adapters} if old else {}
    new_settings = {a.name: a for a in new.config.adapters}
    return {
        "adapters_added": sorted(set(new_settings) - set(old_settings)),
        "adapters_removed": sorted(set(old_settings) - set(new_settings)),
        "adapters_changed": sorted(n for n in set(new_settings) & set(old_settings)
                                   if new_settings[n] != old_settings[n]),
        "templates": {name: report.to_json() for name, report in new.index_reports.items()
                      if report.added or report.changed or report.removed},
    }
