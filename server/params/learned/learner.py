"""The learned extractor of one adapter: a model per annotated template, where each came from, and (re)fits.

`prepare` runs when the adapter starts (server/runtime/build.py): a model fitted on exactly the same
training set before (memory, then the cache directory) is used at once; otherwise the first fits are
waited for, and refits after a reload run in the background while the adapter's previous models keep
serving (the rule the intent model follows). A template without annotations has no model and the
deterministic readers work alone, as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...bulkhead import REFIT_POOL, run_on
from ...templates import Template
from ..text import Word
from .features import Mark, sentence_features
from .store import LearnedModels
from .tagger import SequenceModel, Tagging, fit_crf
from .training import Marker, Plan, marked_values, plans

log = logging.getLogger("intent_router.params.learned")

Models = dict[str, SequenceModel]  # template id -> its model


class LearnedExtractor:
    def __init__(self, owner: str, models: LearnedModels, cache_dir: Path | None) -> None:
        self.owner = owner
        self.store = models
        self.cache_dir = cache_dir
        self.models: Models = {}
        self.sources: dict[str, str] = {}  # template id -> fitted | memory | disk | previous
        self.source = "not prepared"  # summary: fitted | memory | disk | previous | no annotations | failed
        self.examples = 0  # examples the models learn from (own and borrowed)
        self.fit_seconds: float | None = None
        self._refit: asyncio.Task[None] | None = None

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "examples": self.examples}
        if self.models:
            out["templates"] = dict(sorted(Counter(self.sources.values()).items()))
            out["parameters"] = sorted({p for m in self.models.values() for p in m.parameters})
        if self.fit_seconds is not None:
            out["fit_seconds"] = round(self.fit_seconds, 3)
        if self._refit is not None and not self._refit.done():
            out["refitting"] = True
        return out

    async def prepare(self, templates: Iterable[Template], marker: Marker, lists: Callable[[Template], str]) -> None:
        """Load or fit a model for every annotated template. `marker` puts the readers' marks on a text for
        a template; `lists` digests the value lists its features read (part of each model's fingerprint)."""
        listed = list(templates)
        wanted = plans(listed)
        self.examples = sum(len(plan.own) + len(plan.borrowed) for plan in wanted.values())
        wanted = {tid: plan for tid, plan in wanted.items() if plan.labels()}
        if not wanted:
            self.models, self.sources, self.source = {}, {}, "no annotations"
            return
        keys = {tid: plan.fingerprint(lists(plan.template)) for tid, plan in wanted.items()}
        found: Models = {}
        sources: dict[str, str] = {}
        for tid, key in keys.items():
            model, source = await asyncio.to_thread(self.store.find, key, self.cache_dir)
            if model is not None and source is not None:
                found[tid], sources[tid] = model, source
        missing = {tid: plan for tid, plan in wanted.items() if tid not in found}
        if not missing:
            self._use(found, sources)
            return
        fit = _Fit(missing, keys, marker, marked_values(listed))
        previous = self.store.previous(self.owner)
        if previous is None:
            await self._fit(fit, found, sources)
            return
        stand_ins = {tid: previous[tid] for tid in missing if tid in previous}
        self._use({**found, **stand_ins}, {**sources, **dict.fromkeys(stand_ins, "previous")})
        self._refit = asyncio.ensure_future(self._fit(fit, found, sources))

    async def _fit(self, fit: _Fit, found: Models, sources: dict[str, str]) -> None:
        started = time.perf_counter()
        try:
            fitted = await run_on(REFIT_POOL, fit.run)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("adapter %s: learned extractor not fitted; the readers work without it", self.owner)
            if not self.models:
                self.source = "failed"
            return
        self.fit_seconds = time.perf_counter() - started
        for tid, model in fitted.items():
            await asyncio.to_thread(self.store.put, fit.keys[tid], model, self.cache_dir)
        self._use({**found, **fitted}, {**sources, **dict.fromkeys(fitted, "fitted")})
        log.info(
            "adapter %s: learned extractor fitted for %d templates (%d sentences) in %.2f s",
            self.owner,
            len(fitted),
            fit.sentences,
            self.fit_seconds,
        )

    def _use(self, models: Models, sources: dict[str, str]) -> None:
        self.models, self.sources = models, sources
        kinds = set(sources.values())
        self.source = next((k for k in ("previous", "fitted", "disk", "memory") if k in kinds), "memory")
        self.store.remember(self.owner, models)

    def model_for(self, template_id: str) -> SequenceModel | None:
        return self.models.get(template_id)

    def tag(
        self, template_id: str, text: str, toks: Sequence[Word], marks: Sequence[Mark], parameters: Iterable[str]
    ) -> Tagging | None:
        """The template's model's labels for a question (`text`, its words `toks`), restricted to
        `parameters`; None without a model or when it knows none of them."""
        model = self.models.get(template_id)
        if model is None or not toks:
            return None
        known = model.parameters & frozenset(parameters)
        if not known:
            return None
        return model.tag(sentence_features(toks, marks, text), known)

    async def refitted(self) -> None:
        """Wait for a background refit (tests, tools)."""
        if self._refit is not None:
            await asyncio.gather(self._refit, return_exceptions=True)

    async def close(self) -> None:
        if self._refit is not None:
            self._refit.cancel()


@dataclass
class _Fit:
    """The templates to fit, with what their training sets are built from (built in the fitting thread)."""

    plans: dict[str, Plan]
    keys: dict[str, str]
    marker: Marker
    pool: dict[str, list[str]]
    sentences: int = 0

    def run(self) -> Models:
        out: Models = {}
        for tid, plan in self.plans.items():
            data = plan.training_set(self.marker, self.pool)
            self.sentences += data.sentences
            out[tid] = SequenceModel(fit_crf(data.xs, data.ys))
        return out
