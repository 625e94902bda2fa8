"""Fitted intent models by the fingerprint of what they were fitted on, owned by the runtime holder.

A fit costs seconds for hundreds of templates; another composite over the same children, or a reload
that did not touch them, reuses the model instead. Behind the memory layer, a directory
(`composite_retrieval.intent_model.cache_dir`) keeps the fits across restarts (intent/model_files.py), so a
warm start with unchanged templates refits nothing.

A model holds its lexical weights and regression (~0.9 KB per example at 1,000 templates) and reads the
examples' vectors from its composite's in-memory stores (a model that could not, or an older fit still
referring to replaced packs, keeps 1.5 KB more per example), so the memory layer finds the fits something
still uses (a stage, the last fit of a lineage) and lets go of the others when the directory keeps them:
kept after each edit, the four last fits stayed resident (a reverted edit loads its fit from the directory
instead, in a fraction of a second). Without a directory it keeps the last few, as the only copy.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..named_threads import NamedPool
from ..recent import Recent
from . import model_files

if TYPE_CHECKING:
    from .acceptance import Acceptance
    from .intent_model import IntentModel

Source = Literal["memory", "disk"]
V = TypeVar("V")
log = logging.getLogger("intent_router.routing.fitted_models")


@dataclass
class FittedStats:
    """What the cache did since start: fits found in memory, loaded from disk, written to disk."""

    memory_hits: int = 0
    disk_loads: int = 0
    disk_misses: int = 0
    disk_writes: int = 0
    disk_write_errors: int = 0


class FittedModels:
    """Intent models and the acceptance tests fitted on them: memory first, then the directory given."""

    def __init__(self, size: int = 4) -> None:
        # fits the directory does not keep (strong: the only copy); all fits, weakly, by key
        self._models: Recent[str, IntentModel] = Recent(size)
        self._acceptance: Recent[str, Acceptance] = Recent(size)
        self._live_models: weakref.WeakValueDictionary[str, IntentModel] = weakref.WeakValueDictionary()
        self._live_acceptance: weakref.WeakValueDictionary[str, Acceptance] = weakref.WeakValueDictionary()
        self._latest: Recent[str, Any] = Recent(32)  # lineage -> the last fit applied (a FitResult)
        self._generations: dict[str, int] = {}
        self._lock = threading.Lock()
        self._writer: NamedPool | None = None
        self._pending: list[Future[None]] = []
        self.stats = FittedStats()

    # --- fits by lineage (one composite, one embedding model, one set of fitting settings) ---------------
    def begin(self, lineage: str) -> int:
        """A new fit is wanted for `lineage`: its generation number (older fits still running stop)."""
        with self._lock:
            generation = self._generations.get(lineage, 0) + 1
            self._generations[lineage] = generation
            return generation

    def is_newest(self, lineage: str, generation: int) -> bool:
        with self._lock:
            return self._generations.get(lineage, 0) == generation

    def remember(self, lineage: str, result: Any) -> None:
        """The fit now in use for `lineage`: the stand-in for the next composite of that lineage."""
        self._latest.put(lineage, result)

    def previous(self, lineage: str) -> Any:
        """The fit last used for `lineage` (None: there was none)."""
        return self._latest.get(lineage)

    def find(self, key: str, directory: Path | None = None) -> tuple[IntentModel | None, Source | None]:
        """The model fitted for `key` and where it came from (None, None: fit it)."""
        model = self._memory(self._models, self._live_models, key)
        if model is not None:
            self.stats.memory_hits += 1
            return model, "memory"
        if directory is None:
            return None, None
        model = model_files.load_model(directory, key)
        if model is None:
            self.stats.disk_misses += 1
            return None, None
        self.stats.disk_loads += 1
        self._keep(self._models, self._live_models, key, model, directory)
        return model, "disk"

    def get(self, key: str, directory: Path | None = None) -> IntentModel | None:
        return self.find(key, directory)[0]

    def put(self, key: str, model: IntentModel, directory: Path | None = None) -> None:
        self._keep(self._models, self._live_models, key, model, directory)
        if directory is not None:
            self._save(lambda: model_files.save_model(directory, key, model))

    def find_acceptance(
        self, key: str, model: IntentModel, directory: Path | None = None
    ) -> tuple[Acceptance | None, Source | None]:
        """The acceptance test fitted for `key` on exactly `model` (None, None: fit it)."""
        fitted = self._memory(self._acceptance, self._live_acceptance, key)
        if fitted is not None and fitted.intent_model is model:
            self.stats.memory_hits += 1
            return fitted, "memory"
        if directory is None:
            return None, None
        fitted = model_files.load_acceptance(directory, key, model)
        if fitted is None:
            self.stats.disk_misses += 1
            return None, None
        self.stats.disk_loads += 1
        self._keep(self._acceptance, self._live_acceptance, key, fitted, directory)
        return fitted, "disk"

    def get_acceptance(self, key: str) -> Acceptance | None:
        return self._memory(self._acceptance, self._live_acceptance, key)

    def put_acceptance(self, key: str, acceptance: Acceptance, directory: Path | None = None) -> None:
        self._keep(self._acceptance, self._live_acceptance, key, acceptance, directory)
        if directory is not None:
            self._save(lambda: model_files.save_acceptance(directory, key, acceptance))

    def _memory(self, kept: Recent[str, V], live: weakref.WeakValueDictionary[str, V], key: str) -> V | None:
        found = kept.get(key)
        if found is not None:
            return found
        with self._lock:
            return live.get(key)

    def _keep(
        self,
        kept: Recent[str, V],
        live: weakref.WeakValueDictionary[str, V],
        key: str,
        value: V,
        directory: Path | None,
    ) -> None:
        """Found while something uses it; held here too only when no directory keeps it."""
        with self._lock:
            live[key] = value
        if directory is None:
            kept.put(key, value)

    def _save(self, write: Callable[[], object]) -> None:
        """Written by one thread of its own, in order: the fit is used at once, while its file (tens of MB,
        fsynced: up to a second at 1,000 templates) is written. `flush` waits for what is pending."""
        with self._lock:
            if self._writer is None:
                self._writer = NamedPool(1, thread_name_prefix="fitted-models-writer")
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self._writer.submit(self._write, write))

    def _write(self, write: Callable[[], object]) -> None:
        """A failed write (read-only disk, full disk) costs the next start a refit, not this one."""
        try:
            write()
            self.stats.disk_writes += 1
        except OSError as exc:
            self.stats.disk_write_errors += 1
            log.warning("could not keep the fitted model on disk (the next start refits): %s", exc)

    def flush(self) -> None:
        """Wait until every fit handed to the directory is written (a runtime's close; tests)."""
        with self._lock:
            pending, self._pending = self._pending, []
        wait(pending)
