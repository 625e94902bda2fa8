"""Intent-model stage: scores candidates with a model fitted at start on all children's examples."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..candidates import Candidate
from ..intent_model import IntentModel
from ..settings import IntentModelSettings
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

    def fit(self, children: Sequence[Any]) -> None:
        """Fit on every template of every child (embeddings come from the children's caches; the
        texts feed the model's lexical part)."""
        import time

        started = time.perf_counter()
        models = {child.embedder.model_id for child in children}
        if len(models) != 1:
            self.unavailable = f"children use {len(models)} embedding models; the intent model needs one"
            log.warning("intent model off: %s", self.unavailable)
            return
        keys, examples, descriptions, texts = [], [], [], []  # texts: per template
        for child in children:
            templates = list(child.templates.values())
            if not templates:
                continue
            batch = [t.description for t in templates] + [e for t in templates for e in t.nl_examples]
            vectors = child.embedder.embed_sync(batch)
            offset = len(templates)
            for i, template in enumerate(templates):
                n = len(template.nl_examples)
                keys.append((child.name, template.id))
                descriptions.append(vectors[i])
                texts.append([template.description, *template.nl_examples])
                examples.append(vectors[offset:offset + n] if n else vectors[i:i + 1])
                offset += n
        if len(keys) > self.settings.max_templates:
            limit = self.settings.max_templates
            self.unavailable = f"{len(keys)} templates exceed intent_model.max_templates ({limit})"
            log.warning("intent model off: %s", self.unavailable)
            return
        if len(keys) < 2:
            self.unavailable = "fewer than two templates"
            return
        self.model = IntentModel.fit(keys, examples, descriptions, texts)
        self.model_id = next(iter(models))
        self.unavailable = None
        self.fit_seconds = time.perf_counter() - started
        log.info("intent model fitted on %d templates in %.2f s", len(keys), self.fit_seconds)

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        if self.model is None or not candidates:
            return StageReport(self.name, error=f"intent model unavailable: {self.unavailable}")
        query = next((c.query_vector for c in candidates if c.query_vector is not None), None)
        if query is None:
            return StageReport(self.name, error="intent model unavailable: no query vector")
        scores = self.model.confidences(np.asarray(query), question)
        for cand in candidates:
            cand.intent_model_score = scores.get(cand.key)
        return StageReport(self.name)
