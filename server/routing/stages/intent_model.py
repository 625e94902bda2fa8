"""Intent-model stage: scores candidates with a model fitted at start on all children's examples."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..candidates import Candidate
from ..intent_model import IntentModel
from ..settings import IntentModelSettings
from ..token_views import TokenViewModel, worth_fitting
from .base import ScoringStage, StageReport

log = logging.getLogger("intent_router.routing.intent_model")


class IntentModelStage(ScoringStage):
    name = "intent_model"

    def __init__(self, settings: IntentModelSettings) -> None:
        self.settings = settings
        self.weight = settings.weight
        self.model: IntentModel | None = None
        self.model_id: str | None = None
        self.unavailable: str | None = "not fitted yet"
        self.fit_seconds: float | None = None
        self.embedder: Any = None  # where the question's token views come from

    def fit(self, children: Sequence[Any]) -> None:
        """Fit on every template of every child (embeddings come from the children's caches; the
        texts feed the model's lexical part). A model fitted on exactly these templates before (by
        another composite over the same children, or before a reload that did not touch them) is
        reused: a fit costs seconds for hundreds of templates."""
        started = time.perf_counter()
        models = {child.embedder.model_id for child in children}
        if len(models) != 1:
            self.unavailable = f"children use {len(models)} embedding models; the intent model needs one"
            log.warning("intent model off: %s", self.unavailable)
            return
        count = sum(len(child.templates) for child in children)
        if count > self.settings.max_templates:
            self.unavailable = f"{count} templates exceed intent_model.max_templates ({self.settings.max_templates})"
            log.warning("intent model off: %s", self.unavailable)
            return
        if count < 2:
            self.unavailable = "fewer than two templates"
            return
        model_id = next(iter(models))
        key = _fingerprint(model_id, children, self.settings.token_views)
        model = _FITTED.get(key)
        if model is None:
            model = _fit(children, self.settings.token_views)
            _FITTED.put(key, model)
        self.model, self.model_id, self.unavailable = model, model_id, None
        self.embedder = children[0].embedder
        self.fit_seconds = time.perf_counter() - started
        log.info("intent model ready on %d templates in %.2f s", count, self.fit_seconds)

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        if self.model is None or not candidates:
            return StageReport(self.name, error=f"intent model unavailable: {self.unavailable}")
        query = next((c.query_vector for c in candidates if c.query_vector is not None), None)
        if query is None:
            return StageReport(self.name, error="intent model unavailable: no query vector")
        views = None
        if self.model.views is not None:
            try:
                [views] = await self.embedder.token_views([question])
            except Exception as exc:  # the sentence-level model still scores without them
                log.warning("intent model without token views for this question: %s", exc)
        scores = self.model.confidences(np.asarray(query), question, views)
        for cand in candidates:
            cand.intent_model_score = scores.get(cand.key)
        return StageReport(self.name)


def _fit(children: Sequence[Any], token_views: bool) -> IntentModel:
    keys, examples, descriptions, texts = [], [], [], []  # texts: per template
    example_views, description_views = [], []
    total = sum(len(t.nl_examples) or 1 for child in children for t in child.templates.values())
    templates_count = sum(len(child.templates) for child in children)
    token_views = (
        token_views
        and all(child.embedder.supports_token_views for child in children)
        and worth_fitting(templates_count, total)
    )
    for child in children:
        templates = list(child.templates.values())
        if not templates:
            continue
        batch = [t.description for t in templates] + [e for t in templates for e in t.nl_examples]
        vectors = child.embedder.embed_sync(batch)
        views = child.embedder.token_views_sync(batch) if token_views else []
        offset = len(templates)
        for i, template in enumerate(templates):
            n = len(template.nl_examples)
            keys.append((child.name, template.id))
            descriptions.append(vectors[i])
            texts.append([template.description, *template.nl_examples])
            examples.append(vectors[offset : offset + n] if n else vectors[i : i + 1])
            if views:
                description_views.append(views[i])
                example_views.append(views[offset : offset + n] if n else views[i : i + 1])
            offset += n
    model = IntentModel.fit(keys, examples, descriptions, texts)
    if token_views:
        model.views = TokenViewModel.fit(example_views, description_views)
    return model


def _fingerprint(model_id: str, children: Sequence[Any], token_views: bool) -> str:
    digest = hashlib.sha256(f"{model_id}|views={token_views}".encode())
    for child in children:
        digest.update(b"\x00" + child.name.encode())
        for template in child.templates.values():
            digest.update(b"\x01" + template.id.encode() + b"\x02" + template.content_hash().encode())
    return digest.hexdigest()


class _FittedModels:
    """The last few fitted models by fingerprint (small: each holds its examples' vectors)."""

    def __init__(self, size: int = 4) -> None:
        self._models: OrderedDict[str, IntentModel] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: str) -> IntentModel | None:
        with self._lock:
            model = self._models.get(key)
            if model is not None:
                self._models.move_to_end(key)
            return model

    def put(self, key: str, model: IntentModel) -> None:
        with self._lock:
            self._models[key] = model
            self._models.move_to_end(key)
            while len(self._models) > self._size:
                self._models.popitem(last=False)


_FITTED = _FittedModels()
