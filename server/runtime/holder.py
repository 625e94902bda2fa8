"""Holds the current Runtime and swaps in a new one atomically on reload.

A reload loads, validates and builds a complete new runtime off the request path; only when that
succeeds is it swapped in (one assignment). Requests that already hold the old runtime finish on it;
it is closed after they drain, sparing whatever the newer runtimes still share with it. A config that
does not validate changes nothing: the last good runtime keeps serving and `last_load` carries the
errors (file, line, key) until a good config loads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..adapters.base import DataAdapterSettings
from ..adapters.result_cache import ResultCache, ResultCacheSettings
from ..adapters.result_cache_factory import build_result_cache
from ..config.errors import ConfigError
from ..embedding.factory import preload, use_encoder_lanes
from ..intent.fitted_models import FittedModels
from ..templates import Template
from ..templates.library import glob_base
from .build import Runtime, build_runtime
from .config_hash import config_hash
from .incremental import IncrementalLoader, LoadResult
from .loader import LoadedConfig, load_app_settings, resolve_config_path
from .model_mix import mixed_model_warnings
from .reload_guard import reload_issues, start_issues
from .restart import restart_required
from .settings import AppSettings

log = logging.getLogger("intent_router.reload")


@dataclass
class LoadStatus:
    ok: bool
    at: float
    seconds: float
    errors: list[dict[str, Any]] = field(default_factory=list)
    changes: dict[str, Any] = field(default_factory=dict)
    trigger: str = "admin"  # start | watch | admin | cluster (announced by another replica)
    generation: int = 0  # which config serves: increases with every swap
    config_hash: str | None = None  # content hash of the config serving after this load
    restart_required: list[str] = field(default_factory=list)  # changed keys that apply only after a restart
    warnings: list[str] = field(default_factory=list)  # loaded, but worth fixing (runtime/model_mix.py)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "at": self.at,
            "seconds": round(self.seconds, 4),
            "errors": self.errors,
            "changes": self.changes,
            "trigger": self.trigger,
            "generation": self.generation,
            "config_hash": self.config_hash,
            "restart_required": self.restart_required,
            "warnings": self.warnings,
        }


class RuntimeHolder:
    def __init__(
        self,
        config_path: Path,
        close_grace: float = 1.0,
        drain_limit: float = 60.0,
    ) -> None:
        self.config_path = config_path
        self.fitted_models = FittedModels()  # intent models outlive the runtimes that fitted them
        self.result_cache: ResultCache | None = None  # query results outlive reloads too (per adapter)
        self._result_cache_settings: ResultCacheSettings | None = None
        self.close_grace = close_grace  # an old runtime lives at least this long after a swap
        self.drain_limit = drain_limit  # ... and at most this long while requests still use it
        self.loader = IncrementalLoader(config_path)
        self._current: Runtime | None = None
        self._retiring: list[Runtime] = []
        self._closers: set[asyncio.Task] = set()
        self._lock = asyncio.Lock()
        self.generation = 0
        self.config_hash: str | None = None  # of the serving config (server/runtime/config_hash.py)
        self.last_load: LoadStatus | None = None
        self.last_good_load: LoadStatus | None = None
        self._failed_files: list[str] = []
        self.load_listeners: list[Callable[[LoadStatus], None]] = []  # told of every load, good or not
        # told when a replaced config has been closed after draining (its memory can be reclaimed)
        self.retired_listeners: list[Callable[[], None]] = []
        self.started_app: AppSettings | None = None  # settings the process started with (restart.py)
        # the address the server listens on (serve sets it): a reload must keep keys there if it is not
        # loopback. None: the server.host of the config the server started with.
        self.listen_host: str | None = None
        self._encoder_lanes = False  # the lanes follow the config (start_encoder_lanes)

    @property
    def listening_host(self) -> str:
        """The address the server listens on: `serve`'s (its --host), else the config's server.host."""
        return self.listen_host or self.current.config.app.server.host

    def start_encoder_lanes(self) -> None:
        """From now on the local encoder's lanes follow `server.encoder_lanes` of the config that serves (the
        server calls this once it has answered; one-shot commands never open lanes)."""
        self._encoder_lanes = True
        self._apply_encoder_lanes()

    def _apply_encoder_lanes(self) -> None:
        if self._encoder_lanes and self._current is not None:
            server = self._current.config.app.server
            use_encoder_lanes(server.encoder_lanes, self._current.embedders.values(), server.encoder_lane_min_questions)

    @property
    def current(self) -> Runtime:
        if self._current is None:
            raise RuntimeError("no configuration loaded")
        return self._current

    async def start(self) -> Runtime:
        """First load: errors propagate (a server must not start on a broken config)."""
        started = time.perf_counter()
        model_load = asyncio.ensure_future(asyncio.to_thread(_preload_embedder, self.config_path))
        result = await asyncio.to_thread(self.loader.load)
        refused = start_issues(result.config)
        if refused:
            raise ConfigError(refused)
        loaded = time.perf_counter()
        digest = await asyncio.to_thread(config_hash, result.config)
        runtime = await build_runtime(
            result.config, fitted_models=self.fitted_models, result_cache=await self._result_cache_for(result.config)
        )
        await model_load  # done: the build waited for the model it started loading
        phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in runtime.phases.items())
        log.info(
            "started in %.2f s: config loaded in %.2f s (%d templates), runtime built in %.2f s (%s)",
            time.perf_counter() - started,
            loaded - started,
            sum(len(t) for t in result.config.templates.values()),
            runtime.build_seconds,
            phases,
        )
        self._current = runtime
        self._apply_encoder_lanes()
        self.started_app = runtime.config.app
        self.generation = 1
        self.config_hash = digest
        self.last_load = self.last_good_load = LoadStatus(
            True,
            time.time(),
            time.perf_counter() - started,
            changes=describe_changes(None, runtime, result),
            trigger="start",
            generation=self.generation,
            config_hash=digest,
            warnings=mixed_model_warnings(result.config) + runtime.warnings(),
        )
        return runtime

    async def reload(
        self, trigger: str = "admin", rebuild_stores: bool = False, allow_removal: bool = False, force: bool = False
    ) -> LoadStatus:
        """Load, validate and build the config now; swap it in only if all of that worked and the new
        config passes the reload rules (server/runtime/reload_guard.py; `allow_removal` lets it take
        away adapters that clients use). `force` builds even when no config file changed: a model folder
        the config names was rewritten (the background tune), and its embedder is keyed by its weights."""
        async with self._lock:
            started = time.perf_counter()
            old = self._current
            try:
                if rebuild_stores:
                    self.loader.forget()
                result = await asyncio.to_thread(self.loader.load)
                if result.unchanged and old is not None and not rebuild_stores and not force:
                    self._failed_files = []
                    return self._record(
                        LoadStatus(
                            True,
                            time.time(),
                            time.perf_counter() - started,
                            changes={"unchanged": True},
                            trigger=trigger,
                            generation=self.generation,
                        ),
                        good=True,
                    )
                if old is not None:
                    host = self.listen_host or old.config.app.server.host
                    issues = reload_issues(old.config, result.config, host, allow_removal)
                    if issues:
                        self.loader.forget()  # the refused files must be loaded (and refused) again next time
                        raise ConfigError(issues)
                digest = await asyncio.to_thread(config_hash, result.config)
                cache = await self._result_cache_for(result.config)
                try:
                    new = await build_runtime(
                        result.config,
                        previous=old,
                        fitted_models=self.fitted_models,
                        result_cache=cache,
                        rebuild_stores=rebuild_stores,
                    )
                except ConfigError:
                    # the files loaded, the runtime refused them (a values_from list over its max_values):
                    # load them, and refuse them, again next time
                    self.loader.forget()
                    raise
            except ConfigError as exc:
                log.error("config reload rejected; keeping the last good config:\n%s", exc)
                self._failed_files = sorted({i.file for i in exc.issues if i.file})
                return self._record(
                    LoadStatus(
                        False,
                        time.time(),
                        time.perf_counter() - started,
                        exc.to_json(),
                        trigger=trigger,
                        generation=self.generation,
                    ),
                    good=False,
                )
            except Exception as exc:
                log.exception("config reload failed while starting adapters; keeping the last good config")
                self.loader.forget()  # else the next reload would find the files "unchanged" and report ok
                message = getattr(exc, "message", None) or f"adapters failed to start: {type(exc).__name__}"
                return self._record(
                    LoadStatus(
                        False,
                        time.time(),
                        time.perf_counter() - started,
                        [{"file": None, "line": None, "key": "", "message": message}],
                        trigger=trigger,
                        generation=self.generation,
                    ),
                    good=False,
                )
            self._current = new
            self._apply_encoder_lanes()
            self.generation += 1
            self.config_hash = digest
            self._failed_files = []
            if old is not None:
                self._retire(old)
            changes = describe_changes(old, new, result)
            await self._forget_results(changes)
            status = LoadStatus(
                True,
                time.time(),
                time.perf_counter() - started,
                changes=changes,
                trigger=trigger,
                generation=self.generation,
                warnings=mixed_model_warnings(new.config) + new.warnings(),
            )
            log.info("config reloaded (%s) in %.3f s: %s", trigger, status.seconds, _summary(changes))
            return self._record(status, good=True)

    async def _result_cache_for(self, config: LoadedConfig) -> ResultCache | None:
        """The holder's result cache, rebuilt (empty) when its settings change."""
        settings = config.app.result_cache
        if self._result_cache_settings != settings:
            if self.result_cache is not None:
                await self.result_cache.close()
            self.result_cache = build_result_cache(settings)
            self._result_cache_settings = settings
        return self.result_cache

    async def _forget_results(self, changes: dict[str, Any]) -> None:
        """Answers of adapters whose settings or templates changed, or that left, are dropped."""
        if self.result_cache is None:
            return
        a = changes["adapters"]
        names = {*a["changed"], *a["removed"], *(r["from"] for r in a["renamed"]), *changes["templates"]}
        for name in sorted(names):
            await self.result_cache.forget(name)

    def restart_required(self) -> list[str]:
        """config.yaml keys of the serving config that differ from the start and need a restart to apply."""
        if self.started_app is None or self._current is None:
            return []
        return restart_required(self.started_app, self._current.config.app)

    def _record(self, status: LoadStatus, good: bool) -> LoadStatus:
        status.config_hash = self.config_hash
        status.restart_required = self.restart_required()
        if status.restart_required and good:
            log.warning("config changes that need a restart to apply: %s", ", ".join(status.restart_required))
        self.last_load = status
        if good:
            self.last_good_load = status
        for listener in self.load_listeners:
            try:
                listener(status)
            except Exception:  # a listener (metrics, MCP notifications) must not fail a reload
                log.exception("a config load listener failed")
        return status

    # --- request accounting --------------------------------------------------------------------
    def acquire(self) -> Runtime:
        runtime = self.current
        runtime.in_flight += 1
        return runtime

    def release(self, runtime: Runtime) -> None:
        runtime.in_flight -= 1

    @property
    def in_flight(self) -> int:
        """Requests being answered now, on the serving config and on replaced ones still draining."""
        current = [self._current] if self._current is not None else []
        return sum(r.in_flight for r in [*current, *self._retiring])

    # --- retiring old runtimes ------------------------------------------------------------------
    def _retire(self, runtime: Runtime) -> None:
        self._retiring.append(runtime)
        task = asyncio.get_running_loop().create_task(self._close_when_drained(runtime))
        self._closers.add(task)
        task.add_done_callback(self._closers.discard)
        task.add_done_callback(self._retired)  # once the task's frame (and its reference) is gone

    def _retired(self, task: asyncio.Task) -> None:
        if task.cancelled():
            return
        for listener in self.retired_listeners:
            try:
                listener()
            except Exception:
                log.exception("a retired-config listener failed")

    async def _close_when_drained(self, runtime: Runtime) -> None:
        await asyncio.sleep(self.close_grace)
        deadline = time.monotonic() + self.drain_limit
        while runtime.in_flight > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if runtime.in_flight > 0:
            log.warning("closing a replaced config with %d requests still running", runtime.in_flight)
        self._retiring.remove(runtime)
        keep = [*self._retiring, *([self._current] if self._current is not None else [])]
        await runtime.close(keep=keep, purge_removed=True)

    async def close(self) -> None:
        for task in list(self._closers):
            task.cancel()
        await asyncio.gather(*self._closers, return_exceptions=True)
        open_runtimes = [*self._retiring, *([self._current] if self._current is not None else [])]
        self._retiring.clear()
        self._current = None
        while open_runtimes:
            runtime = open_runtimes.pop(0)
            await runtime.close(keep=open_runtimes)
        if self.result_cache is not None:
            await self.result_cache.close()
            self.result_cache = None

    # --- what to watch ---------------------------------------------------------------------------
    def watch_paths(self) -> list[Path]:
        """Directories whose changes may change the config: the config dir, every directory a library
        of the serving config came from or its globs could match in, and where the last rejected load
        found errors (so that fixing a file the good config does not use yet is noticed)."""
        config_file, adapters_dir = resolve_config_path(self.config_path)
        paths: set[Path] = {config_file.parent, adapters_dir}
        if self._current is not None:
            config = self._current.config
            for file in config.files:
                paths.add(file.parent)
            for settings in config.adapters:
                for pattern in settings.templates if isinstance(settings, DataAdapterSettings) else []:
                    paths.add(_static_prefix(pattern, config.root))
            root = config.root
        else:
            root = config_file.parent.parent
        for name in self._failed_files:
            file = Path(name)
            paths.add((file if file.is_absolute() else root / file).parent)
        return sorted(p for p in paths if p.is_dir())


def _static_prefix(pattern: str, root: Path) -> Path:
    """The deepest directory of a glob pattern that has no wildcard (absolute, or under root)."""
    base, rest = glob_base(pattern, root)
    return base if rest else base.parent


def _preload_embedder(config_path: Path) -> None:
    """The default embedding model of config.yaml, loaded while the rest of the config is read (start only)."""
    try:
        app = load_app_settings(config_path)
    except ConfigError:
        return  # the full load reports it
    config_file, _ = resolve_config_path(config_path)
    preload(app.embedding, config_file.parent.parent)


def describe_changes(old: Runtime | None, new: Runtime, result: LoadResult | None = None) -> dict[str, Any]:
    """What a reload changed, for operators: adapters and templates added, removed, changed, renamed."""
    old_settings = {a.name: a for a in old.config.adapters} if old else {}
    new_settings = {a.name: a for a in new.config.adapters}
    added = sorted(set(new_settings) - set(old_settings))
    removed = sorted(set(old_settings) - set(new_settings))
    renamed: list[tuple[str, str]] = []
    for name in list(added):
        match = next((r for r in removed if _same_except_name(old_settings[r], new_settings[name])), None)
        if match is not None:
            renamed.append((match, name))
            added.remove(name)
            removed.remove(match)
    changed = sorted(n for n in set(new_settings) & set(old_settings) if new_settings[n] != old_settings[n])
    pairs = [(n, n) for n in sorted(set(new_settings) & set(old_settings))] + renamed
    templates: dict[str, Any] = {}
    for before, after in pairs:
        old_list = old.config.templates.get(before) if old else None
        new_list = new.config.templates.get(after)
        if old_list is None or new_list is None or old_list is new_list:
            continue
        diff = _template_diff(old_list, new_list)
        if any(diff.values()):
            templates[after] = diff
    reports = new.index_reports
    return {
        "settings": _settings_changed(old, new),
        "adapters": {
            "added": added,
            "removed": removed,
            "changed": changed,
            "renamed": [{"from": a, "to": b} for a, b in renamed],
            "reused": sorted(new.reused_adapters),
        },
        "templates": templates,
        "template_count": sum(len(t) for t in new.config.templates.values()),
        "texts_embedded": sum(r.texts_embedded for r in reports.values()),
        "vectors_reused": sum(r.vectors_reused for r in reports.values()),
        "files_parsed": result.files_parsed if result else None,
        "full_parse": result.full if result else None,
    }


def _settings_changed(old: Runtime | None, new: Runtime) -> list[str]:
    """The config.yaml blocks (auth, server, ...) whose values a reload changed: an operator sees that a save
    switched auth off or moved a timeout, not only what happened to adapters and templates."""
    if old is None:
        return []
    before, after = old.config.app, new.config.app
    return sorted(name for name in type(after).model_fields if getattr(before, name) != getattr(after, name))


def _same_except_name(a, b) -> bool:
    return type(a) is type(b) and a.model_dump(exclude={"name"}) == b.model_dump(exclude={"name"})


def _content(template: Template) -> str:
    """Everything but where the template sits and what it is called (its examples' marks and stated values
    included: dumps leave them out)."""
    dumped = template.model_dump(exclude={"id", "source_file", "source_line"})
    dumped |= {"marks": repr(template.example_spans), "stated": repr(template.example_values)}
    return json.dumps(dumped, sort_keys=True, default=str)


def _template_diff(old: list[Template], new: list[Template]) -> dict[str, list]:
    before = {t.id: t for t in old}
    after = {t.id: t for t in new}
    added = [tid for tid in after if tid not in before]
    removed = [tid for tid in before if tid not in after]
    renamed = []
    gone: dict[str, list[str]] = {}
    for tid in removed:
        gone.setdefault(_content(before[tid]), []).append(tid)
    for tid in list(added):
        matches = gone.get(_content(after[tid]))
        if matches:
            match = matches.pop(0)
            renamed.append({"from": match, "to": tid})
            added.remove(tid)
            removed.remove(match)
    changed = [
        tid
        for tid in after
        if tid in before and before[tid] is not after[tid] and _content(before[tid]) != _content(after[tid])
    ]
    return {"added": added, "removed": removed, "changed": changed, "renamed": renamed}


def _summary(changes: dict[str, Any]) -> str:
    a = changes["adapters"]
    parts = [f"settings changed {changes['settings']}"] if changes.get("settings") else []
    parts += [f"{k} {v}" for k, v in a.items() if v and k != "reused"]
    for name, diff in changes["templates"].items():
        parts += [f"{name}: {k} {v}" for k, v in diff.items() if v]
    return "; ".join(parts) or "no setting, adapter or template changes"
