"""Intent-model stage: scores candidates with a model fitted at start on all children's examples."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...intent.acceptance import Acceptance
from ...intent.example_rows import ExampleRows
from ...intent.first_pass import FirstPass
from ...intent.fit_control import FitCancelled, NeedsFullFit, check, never
from ...intent.fitted_models import FittedModels
from ...intent.intent_model import IntentModel
from ...intent.model_files import code_version
from ...intent.token_views import PooledViewCache, PooledViews, TokenViewModel, worth_fitting
from ...stores.group_search import GroupSearch
from ...stores.stacked import StackedView
from ..candidates import Candidate
from ..settings import AcceptanceSettings, IntentModelSettings
from .base import LocalStage, StageReport
from .intent_rows import pack_rows

log = logging.getLogger("intent_router.routing.intent_model")
# questions x example vector cells above which the scoring leaves the event loop. Measured (one question,
# medians of 400 interleaved): 0.04 / 0.06 / 0.08 / 1.1 ms inline at 200 / 1,000 / 2,000 / 20,000 examples
# of 384 dimensions; the hop to a scoring thread adds ~0.06 ms. From 2,000 examples (768k cells) on, off.
OFF_LOOP_CELLS = 768_000


class IntentModelStage(LocalStage):
    name = "intent_model"

    def __init__(
        self,
        settings: IntentModelSettings,
        fitted: FittedModels,
        acceptance: AcceptanceSettings | None = None,
        root: Path | None = None,
    ) -> None:
        self.settings = settings
        self.fitted = fitted
        self.cache_dir = _cache_dir(settings.cache_dir, root)
        self.source: str | None = None  # where the model came from: fitted | memory | disk
        self.acceptance_source: str | None = None
        self.acceptance_settings = acceptance or AcceptanceSettings()
        self.weight = settings.weight
        self.model: IntentModel | None = None
        self.acceptance: Acceptance | None = None
        self.acceptance_unavailable: str | None = None
        self.model_id: str | None = None
        self.unavailable: str | None = "not fitted yet"
        self.fit_seconds: float | None = None
        self.embedder: Any = None  # where the question's token views come from
        self.known: frozenset[Any] = frozenset()  # the template keys the model in use was fitted on
        self.owner = ""  # the composite's name (set by it): fits of the same owner stand in for each other
        self.generation = 0  # fits applied so far
        self.fitting = False  # a refit runs in the background; the previous model serves meanwhile
        self._at: tuple[IntentModel, dict[Any, int]] | None = None  # key -> score column, for one model
        self._pooled: PooledViewCache | None = None  # questions' pooled token views, for one model
        self.search: GroupSearch | None = None  # the composite's search (set by it): its int8 pass is read
        self._first: tuple[StackedView | None, ExampleRows, FirstPass | None] | None = None

    def fit(self, children: Sequence[Any]) -> None:
        """Fit (or find) the model for these children and use it at once (tests, tools)."""
        result = self.compute(children)
        assert result is not None
        self.apply(result)

    def lineage(self, children: Sequence[Any]) -> str:
        """What makes an older fit a fair stand-in while a new one is computed: the same composite, the same
        embedding model and the same fitting settings (only the templates differ)."""
        models = sorted({child.embedder.model_id for child in children})
        a = self.acceptance_settings
        return f"{self.owner}|{models}|views={self.settings.token_views}|acceptance={a.model_dump_json()}"

    def compute(
        self,
        children: Sequence[Any],
        *,
        fit_allowed: bool = True,
        superseded: Callable[[], bool] = never,
        previous: FitResult | None = None,
    ) -> FitResult | None:
        """The model (and acceptance test) for exactly these children: from the cache (memory, then
        `cache_dir`), else updated from `previous` (the fit in use before a reload: only the templates that
        changed are refitted, in a fraction of a second), else fitted. A model fitted on exactly these
        templates before (by another composite over the same children, before a reload that did not touch
        them, or before a restart) is reused. None when `fit_allowed` is False and a full fit would be
        needed; raises Superseded when `superseded()` says a newer fit was asked for (or shutdown) meanwhile.
        An update that had to leave out token views is returned with `complete` False (fit fully later)."""
        started = time.perf_counter()
        models = {child.embedder.model_id for child in children}
        if len(models) != 1:
            reason = f"children use {len(models)} embedding models; the intent model needs one"
            log.warning("intent model off: %s", reason)
            return FitResult(unavailable=reason)
        count = sum(len(child.templates) for child in children)
        if count > self.settings.max_templates:
            reason = f"{count} templates exceed intent_model.max_templates ({self.settings.max_templates})"
            log.warning("intent model off: %s", reason)
            return FitResult(unavailable=reason)
        if count < 2:
            return FitResult(unavailable="fewer than two templates")
        model_id = next(iter(models))
        key = _fingerprint(model_id, children, self.settings.token_views)
        hashes = template_hashes(children)
        model, source = self.fitted.find(key, self.cache_dir)
        training = None
        result = FitResult(model_id=model_id, embedder=children[0].embedder, hashes=hashes)
        if model is None and previous is not None and previous.model is not None and previous.model_id == model_id:
            model = self._update(previous, children, hashes, superseded, result)
        if model is None:
            if not fit_allowed:
                return None
            check(superseded)
            training = _gather(children, self.settings.token_views, superseded)
            model = training.fit(superseded)
        # the example vectors are read from the stores' packs from now on, not from a copy of the model's own
        # (also for a model found in memory: it moves to the packs the children have now)
        shared = model.share(pack_rows(children))
        log.info("intent model reads %d of %d example vectors from the stores' packs", shared, len(model.norms))
        if result.complete and source is None:
            self.fitted.put(key, model, self.cache_dir)
        result.model, result.source = model, source or ("updated" if model.fit_info.kind == "incremental" else "fitted")
        if self.acceptance_settings.enabled:
            if model.fit_info.kind == "incremental" and previous is not None and previous.acceptance is not None:
                result.acceptance, result.acceptance_source = previous.acceptance.rebased(model), "updated"
                if result.complete:
                    self.fitted.put_acceptance(self._acceptance_key(key), result.acceptance, self.cache_dir)
            else:
                done = self._fit_acceptance(key, model, children, training, result, fit_allowed, superseded)
                if not done:
                    return None
        if model.views is not None:  # the encoder keeps questions' token states from now on (no second pass
            result.embedder.token_views_sync([])  # per question, also when the model was loaded, not fitted)
        result.fit_seconds = time.perf_counter() - started
        how = "fitted" if source is None else f"loaded from {source}"
        log.info("intent model %s on %d templates in %.2f s", how, count, result.fit_seconds)
        return result

    def _update(
        self,
        previous: FitResult,
        children: Sequence[Any],
        hashes: dict[Any, str],
        superseded: Callable[[], bool],
        result: FitResult,
    ) -> IntentModel | None:
        """`previous`'s model with only the changed templates refitted (None: a full fit is needed)."""
        assert previous.model is not None
        changed = [k for k, h in hashes.items() if previous.hashes.get(k) != h]
        try:
            vectors, texts = _gather_changed(children, set(changed), superseded)
            model = previous.model.updated(list(hashes), vectors, texts, superseded)
        except NeedsFullFit as exc:
            log.info("intent model: fitting from scratch (%s)", exc)
            return None
        # token views need the encoder's pass over every text: they come back with the full fit that follows
        result.complete = previous.model.views is None or not self.settings.token_views
        return model

    def apply(self, result: FitResult) -> None:
        """Use this fit from now on (one swap: a question sees the old model or the new one, never a mix)."""
        self.model, self.model_id, self.unavailable = result.model, result.model_id, result.unavailable
        self.acceptance, self.acceptance_unavailable = result.acceptance, result.acceptance_unavailable
        self.source, self.acceptance_source = result.source, result.acceptance_source
        self.embedder, self.fit_seconds = result.embedder, result.fit_seconds
        self.known = frozenset(result.model.keys) if result.model is not None else frozenset()
        self.generation += 1

    def _acceptance_key(self, key: str) -> str:
        a = self.acceptance_settings
        return f"{key}|{a.expected_out_of_scope_share}|{a.folds}|{a.threshold}"

    def _fit_acceptance(
        self,
        key: str,
        model: IntentModel,
        children: Sequence[Any],
        training: _Training | None,
        result: FitResult,
        fit_allowed: bool,
        superseded: Callable[[], bool],
    ) -> bool:
        """The acceptance test, fitted from the same templates (intent/acceptance.py); cached like the model.
        False when it would have to be fitted and that is not allowed now."""
        a = self.acceptance_settings
        acc_key = self._acceptance_key(key)
        fitted, source = self.fitted.find_acceptance(acc_key, model, self.cache_dir)
        result.acceptance_source = source
        if fitted is None:
            if not fit_allowed:
                return False
            check(superseded)  # between the model and the folds: the longest part of a refit
            training = training or _gather(children, False, superseded)
            started = time.perf_counter()
            try:
                fitted = Acceptance.fit(
                    model,
                    training.examples,
                    training.descriptions,
                    out_of_scope_share=a.expected_out_of_scope_share,
                    folds=a.folds,
                    threshold=a.threshold,
                    cancelled=superseded,
                )
            except ValueError as exc:  # e.g. too few templates to leave any out
                result.acceptance, result.acceptance_unavailable = None, str(exc)
                log.warning("acceptance off (confidence_threshold decides): %s", exc)
                return True
            self.fitted.put_acceptance(acc_key, fitted, self.cache_dir)
            result.acceptance_source = "fitted"
            log.info("acceptance fitted in %.2f s: %s", time.perf_counter() - started, fitted.to_json())
        elif source is not None:
            log.info("acceptance loaded from %s", source)
        result.acceptance, result.acceptance_unavailable = fitted, None
        return True

    async def prefetch(self, questions: Sequence[str]) -> _Fetched:
        """One fit for the whole batch (a refit swapped in meanwhile, by `apply`, takes effect for the next),
        and the questions' pooled token views, awaited here: they may need the encoder."""
        model = self.model
        fetched = _Fetched(model, self.acceptance, self.known, self.unavailable)
        if model is None:
            return fetched
        fetched.at, fetched.first = self._positions(model), self._first_pass(model)
        if model.views is not None and questions:
            try:
                fetched.views = await self._pooled_views(model.views).pooled(list(questions), self.embedder.token_views)
            except Exception as exc:  # the sentence-level model still scores without them
                log.warning("intent model without token views for %d question(s): %s", len(questions), exc)
        return fetched

    def heavy(self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]], fetched: Any) -> bool:
        """The products grow with the examples: off the event loop (numpy lets go of the GIL) when they cost
        more than the hop to a thread does."""
        model = fetched.model
        return model is not None and len(model.norms) * model.mu.shape[0] * len(questions) >= OFF_LOOP_CELLS

    def work(
        self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]], fetched: Any
    ) -> list[StageReport]:
        """The questions' candidates scored in matrix products over all of them (one question on the
        request path, hundreds in fit-thresholds: the same arithmetic either way)."""
        model, acceptance, known = fetched.model, fetched.acceptance, fetched.known
        reports = [StageReport(self.name) for _ in questions]
        scored: list[int] = []
        queries = []
        for i, cands in enumerate(candidates):
            if model is None or not cands:
                reports[i].error = f"intent model unavailable: {fetched.unavailable}"
                continue
            unknown = sum(1 for c in cands if c.key not in known)
            if unknown:  # new or renamed templates while the model refits: the other stages decide this question
                reports[i].error = f"intent model refitting: {unknown} candidate(s) not in the fitted model yet"
                continue
            query = next((c.query_vector for c in cands if c.query_vector is not None), None)
            if query is None:
                reports[i].error = "intent model unavailable: no query vector"
                continue
            scored.append(i)
            queries.append(np.asarray(query, np.float32))
        if model is None or not scored:
            return reports
        views = fetched.views
        if views is not None and len(scored) < len(questions):
            views = PooledViews(views.sif[scored], views.maxed[scored])
        keys = [[c.key for c in candidates[i]] for i in scored]
        texts = [questions[i] for i in scored]
        scores, verdicts = _judge(model, acceptance, np.stack(queries), texts, views, keys, fetched.at, fetched.first)
        for row, i in enumerate(scored):
            for cand, score, judged in zip(candidates[i], scores[row], verdicts[row], strict=True):
                cand.stage_scores[self.name] = score
                if judged is not None and acceptance is not None:
                    cand.acceptance, cand.acceptance_judgement = judged.probability, judged
                    cand.acceptance_threshold = acceptance.threshold
        return reports

    def _pooled_views(self, views: TokenViewModel) -> PooledViewCache:
        """The pooled-views cache of the token-view model in use (a new one for a new fit)."""
        if self._pooled is None or self._pooled.model is not views:
            self._pooled = PooledViewCache(views)
        return self._pooled

    def _first_pass(self, model: IntentModel) -> FirstPass | None:
        """The search's int8 pass read for this model's examples (intent/first_pass.py), while the composite's
        view holds every one of them; worked out again when the view or the model's rows change."""
        view = self.search.view(self.model_id) if self.search is not None and self.model_id is not None else None
        cached = self._first
        if cached is None or cached[0] is not view or cached[1] is not model.examples:
            cached = self._first = (view, model.examples, FirstPass.of(view, model.examples))
        return cached[2]

    def _positions(self, model: IntentModel) -> dict[Any, int]:
        """Template key -> its column in the model's scores (built once per fit)."""
        if self._at is None or self._at[0] is not model:
            self._at = (model, {key: i for i, key in enumerate(model.keys)})
        return self._at[1]


def _judge(
    model: IntentModel,
    acceptance: Acceptance | None,
    queries: np.ndarray,
    texts: list[str],
    views: Any,
    keys: list[list[Any]],
    at: dict[Any, int],
    first: FirstPass | None = None,
) -> tuple[list[list[float]], list[list[Any]]]:
    """Per question (row), its candidates' confidences and acceptance verdicts (the stage's arithmetic)."""
    columns = [[at[k] for k in row_keys] for row_keys in keys]
    analyses = model.analyse_many(queries, texts, views, first, columns if first is not None else ())
    confidence = model.calibrated(analyses.fused, analyses.best_cosine)
    scores = [confidence[row, row_columns].tolist() for row, row_columns in enumerate(columns)]
    if acceptance is None:
        return scores, [[None] * len(k) for k in keys]
    return scores, acceptance.judge_many(analyses.embedding_only(), keys)


@dataclass
class _Fetched:
    """What one batch of questions is scored with: the fit in use when it began, and their token views."""

    model: IntentModel | None
    acceptance: Acceptance | None
    known: frozenset[Any]
    unavailable: str | None
    at: dict[Any, int] = field(default_factory=dict)  # template key -> score column
    first: FirstPass | None = None
    views: PooledViews | None = None  # one row per question asked of `prefetch`


# a newer fit for the same composite was asked for, or the server shuts down: this one stops (fit_control.py)
Superseded = FitCancelled


@dataclass
class FitResult:
    """One fit's outcome, swapped into the stage at once by `apply`."""

    model: IntentModel | None = None
    model_id: str | None = None
    source: str | None = None
    unavailable: str | None = None
    acceptance: Acceptance | None = None
    acceptance_source: str | None = None
    acceptance_unavailable: str | None = None
    embedder: Any = None
    fit_seconds: float | None = None
    hashes: dict[Any, str] = field(default_factory=dict)  # template key -> content hash it was fitted on
    complete: bool = True  # False: an update without the token views; a full fit should follow


@dataclass
class _Training:
    """What the intent model (and the acceptance test) are fitted on, gathered from the children."""

    keys: list[tuple[str, str]] = field(default_factory=list)
    examples: list[np.ndarray] = field(default_factory=list)
    descriptions: list[np.ndarray] = field(default_factory=list)
    texts: list[list[str]] = field(default_factory=list)  # per template: description, then examples
    example_views: list[Any] = field(default_factory=list)
    description_views: list[Any] = field(default_factory=list)
    token_views: bool = False

    def fit(self, cancelled: Callable[[], bool] = never) -> IntentModel:
        model = IntentModel.fit(self.keys, self.examples, self.descriptions, self.texts, cancelled)
        if self.token_views:
            check(cancelled)
            model.views = TokenViewModel.fit(self.example_views, self.description_views)
        return model


EMBED_CHUNK = 256  # texts embedded per call in a fit: a cancelled fit stops within one chunk


def _embed(embedder: Any, texts: list[str], cancelled: Callable[[], bool]) -> np.ndarray:
    parts = []
    for lo in range(0, len(texts), EMBED_CHUNK):
        check(cancelled)
        parts.append(embedder.embed_sync(texts[lo : lo + EMBED_CHUNK]))
    return np.vstack(parts) if parts else np.zeros((0, 0), np.float32)


def template_hashes(children: Sequence[Any]) -> dict[Any, str]:
    """Template key -> content hash, in the order the model lists templates."""
    return {(child.name, t.id): t.content_hash() for child in children for t in child.templates.values()}


def _gather_changed(
    children: Sequence[Any], changed: set[Any], cancelled: Callable[[], bool]
) -> tuple[dict[Any, tuple[np.ndarray, np.ndarray]], list[list[str]]]:
    """The vectors of the changed templates only (key -> (examples, description)), and every template's
    texts (description, then examples) for the lexical part, in model order."""
    vectors: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
    texts: list[list[str]] = []
    for child in children:
        mine = [t for t in child.templates.values() if (child.name, t.id) in changed]
        batch = [text for t in mine for text in (t.description, *t.nl_examples)]
        embedded = _embed(child.embedder, batch, cancelled) if batch else None
        offset = 0
        for t in mine:
            n = len(t.nl_examples)
            assert embedded is not None
            block = embedded[offset : offset + 1 + n]
            vectors[(child.name, t.id)] = (block[1:] if n else block[:1], block[0])
            offset += 1 + n
        texts += [[t.description, *t.nl_examples] for t in child.templates.values()]
    return vectors, texts


def _gather(children: Sequence[Any], token_views: bool, cancelled: Callable[[], bool] = never) -> _Training:
    out = _Training()
    total = sum(len(t.nl_examples) or 1 for child in children for t in child.templates.values())
    templates_count = sum(len(child.templates) for child in children)
    out.token_views = (
        token_views
        and all(child.embedder.supports_token_views for child in children)
        and worth_fitting(templates_count, total)
    )
    for child in children:
        templates = list(child.templates.values())
        if not templates:
            continue
        batch = [t.description for t in templates] + [e for t in templates for e in t.nl_examples]
        vectors = _embed(child.embedder, batch, cancelled)
        check(cancelled)
        views = child.embedder.token_views_sync(batch) if out.token_views else []
        offset = len(templates)
        for i, template in enumerate(templates):
            n = len(template.nl_examples)
            out.keys.append((child.name, template.id))
            out.descriptions.append(vectors[i])
            out.texts.append([template.description, *template.nl_examples])
            out.examples.append(vectors[offset : offset + n] if n else vectors[i : i + 1])
            if views:
                out.description_views.append(views[i])
                out.example_views.append(views[offset : offset + n] if n else views[i : i + 1])
            offset += n
    return out


def _cache_dir(setting: str | None, root: Path | None) -> Path | None:
    if setting is None:
        return None
    path = Path(setting).expanduser()
    return path if path.is_absolute() or root is None else root / path


def _fingerprint(model_id: str, children: Sequence[Any], token_views: bool) -> str:
    """What the fit depends on: the embedding model, the settings, every template's content and the
    fitting code itself (a code change must not load a model fitted by older code)."""
    digest = hashlib.sha256(f"{model_id}|views={token_views}|code={code_version()}".encode())
    for child in children:
        digest.update(b"\x00" + child.name.encode())
        for template in child.templates.values():
            digest.update(b"\x01" + template.id.encode() + b"\x02" + template.content_hash().encode())
    return digest.hexdigest()
