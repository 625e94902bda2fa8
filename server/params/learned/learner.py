"""The learned extractor of one adapter: which model it uses, where that came from, and its (re)fit.

`prepare` runs when the adapter starts (server/runtime/build.py): a model fitted on exactly these
annotations before (memory, then the cache directory) is used at once; otherwise the first fit is
waited for, and a refit after a reload runs in the background while the adapter's previous model
keeps serving (the rule the intent model follows). Without annotations there is no model and the
deterministic readers work alone, as before.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ...bulkhead import REFIT_POOL, run_on
from ...templates import Template
from ..text import Word
from .features import Mark, sentence_features
from .store import LearnedModels
from .tagger import SequenceModel, Tagging, fit_crf
from .training import Marker, TrainingSet, training_set

log = logging.getLogger("intent_router.params.learned")


class LearnedExtractor:
    def __init__(self, owner: str, models: LearnedModels, cache_dir: Path | None) -> None:
        self.owner = owner
        self.models = models
        self.cache_dir = cache_dir
        self.model: SequenceModel | None = None
        self.source = "not prepared"  # fitted | memory | disk | previous | no annotations | failed
        self.sentences = 0
        self.fit_seconds: float | None = None
        self._refit: asyncio.Task[None] | None = None

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "sentences": self.sentences}
        if self.model is not None:
            out["parameters"] = sorted(self.model.parameters)
        if self.fit_seconds is not None:
            out["fit_seconds"] = round(self.fit_seconds, 3)
        if self._refit is not None and not self._refit.done():
            out["refitting"] = True
        return out

    async def prepare(self, templates: Iterable[Template], marker: Marker) -> None:
        listed = list(templates)
        data = await asyncio.to_thread(training_set, listed, marker)
        self.sentences = data.sentences
        if not any(label != "O" for label in data.labels()):
            self.model, self.source = None, "no annotations"
            return
        key = data.fingerprint()
        model, source = await asyncio.to_thread(self.models.find, key, self.cache_dir)
        if model is not None and source is not None:
            self._use(model, source)
            return
        previous = self.models.previous(self.owner)
        if previous is None:
            await self._fit(key, data)
            return
        self._use(previous, "previous")
        self._refit = asyncio.ensure_future(self._fit(key, data))

    async def _fit(self, key: str, data: TrainingSet) -> None:
        started = time.perf_counter()
        try:
            model = await run_on(REFIT_POOL, _fit_model, data)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception(
                "adapter %s: the learned extractor could not be fitted; values are read without it", self.owner
            )
            if self.model is None:
                self.source = "failed"
            return
        self.fit_seconds = time.perf_counter() - started
        await asyncio.to_thread(self.models.put, key, model, self.cache_dir)
        self._use(model, "fitted")
        log.info(
            "adapter %s: learned extractor fitted on %d sentences in %.2f s",
            self.owner,
            data.sentences,
            self.fit_seconds,
        )

    def _use(self, model: SequenceModel, source: str) -> None:
        self.model, self.source = model, source
        self.models.remember(self.owner, model)

    def tag(self, toks: Sequence[Word], marks: Sequence[Mark], parameters: Iterable[str]) -> Tagging | None:
        """The model's labels for a question, restricted to `parameters`; None when it knows none of them."""
        model = self.model
        if model is None or not toks:
            return None
        known = model.parameters & frozenset(parameters)
        if not known:
            return None
        return model.tag(sentence_features(toks, marks), known)

    async def refitted(self) -> None:
        """Wait for a background refit (tests, tools)."""
        if self._refit is not None:
            await asyncio.gather(self._refit, return_exceptions=True)

    async def close(self) -> None:
        if self._refit is not None:
            self._refit.cancel()


def _fit_model(data: TrainingSet) -> SequenceModel:
    return SequenceModel(fit_crf(data.xs, data.ys))
