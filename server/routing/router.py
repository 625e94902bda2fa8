"""Route a question over a list of template sources: embed once per model, search, score, decide."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..bulkhead import SEARCH_POOL, run_on
from ..embedding.base import Embedder
from ..intent.calibration import ScoreCalibration
from ..stores.base import StoreHit, TemplateStore
from ..stores.group_search import GroupSearch
from ..stores.placement import searches_off_loop
from ..templates import Template
from .batches import Asked, RoutingBatches
from .candidates import Candidate, SourceFailure
from .combine import combine
from .count_questions import CountChoice, prefer_count_template
from .decision import Decision, decide, rank
from .policy import RoutingPolicy
from .ranking_ends import RankingEnd, refuse_other_end
from .stages.base import SCORING_POOL, LocalStage, ScoringStage, StageReport
from .write_requests import WriteRequest, refuse_write_requests

log = logging.getLogger("intent_router.routing")

_Together = dict[int, list[StoreHit] | Exception]  # id(source) -> its hits, or the error its search raised


class TemplateSource(Protocol):
    """What the router needs of a data source (routing/routable.py): its templates, its embedder and a
    store search."""

    @property
    def templates(self) -> dict[str, Template]: ...

    @property
    def name(self) -> str: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def store(self) -> TemplateStore: ...

    async def search_templates(self, vector: np.ndarray, k: int) -> list[StoreHit]: ...

    @property
    def searches_inline(self) -> bool: ...

    def search_inline(self, vector: np.ndarray, k: int) -> list[StoreHit]: ...


@dataclass
class RoutingOutcome:
    question: str
    candidates: list[Candidate]
    decision: Decision
    adapters_searched: list[str]
    failures: list[SourceFailure] = field(default_factory=list)
    stage_reports: list[StageReport] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    count_choice: CountChoice | None = None  # a count question answered by the count template of its list
    write_request: WriteRequest | None = None  # a request to change data: the templates that only read, out
    ranking_end: RankingEnd | None = None  # one end of a ranking asked for: the templates ranking from the other, out


class Router:
    def __init__(
        self,
        policy: RoutingPolicy,
        stages: Sequence[ScoringStage] = (),
        calibrations: Mapping[str, ScoreCalibration] | None = None,
        group_search: GroupSearch | None = None,
        batches: RoutingBatches | None = None,
    ) -> None:
        self.policy = policy
        # a composite's: its in-memory children searched as one stacked view per embedding model
        self.group_search = group_search
        # a composite's: concurrent questions searched and scored in one job (routing/batches.py)
        self.batches = batches
        self.stages = list(stages)
        # by embedding model: each model's cosines mapped to the common 0..1 scale (intent/calibration.py)
        self.calibrations = dict(calibrations or {})

    def weights(self) -> dict[str, float]:
        weights = {"embedding": self.policy.retrieval.scoring.embedding_weight}
        for stage in self.stages:
            weights[stage.name] = stage.weight
        return weights

    async def route(
        self, question: str, sources: Sequence[TemplateSource], vectors: Mapping[str, np.ndarray] | None = None
    ) -> RoutingOutcome:
        """`vectors`: the question's vector by embedding model id, already computed (fit-thresholds embeds
        its questions in batches); models missing from it embed the question here."""
        timings: dict[str, float] = {}
        started = time.perf_counter()
        embedded, failures = await self._embed(question, sources, vectors or {})
        timings["embed"] = _ms(started)

        t = time.perf_counter()
        if self.batches is not None and not vectors and self._batchable(sources, embedded, failures):
            model = sources[0].embedder.model_id
            return await self.batches.route(Asked(self, question, sources, embedded[model], timings, started, t))
        return await self._route_embedded(question, sources, embedded, failures, timings, started)

    async def _route_embedded(
        self,
        question: str,
        sources: Sequence[TemplateSource],
        vectors: dict[str, np.ndarray],
        failures: list[SourceFailure],
        timings: dict[str, float],
        started: float,
    ) -> RoutingOutcome:
        """The rest of `route` once the question's vectors are in, step by step: search, stages, decision."""
        t = time.perf_counter()
        together = await self._search_together(sources, vectors)
        candidates, search_failures = await self._search(sources, vectors, together)
        failures += search_failures
        timings["search"] = _ms(t)

        reports: list[StageReport] = []
        if candidates and self.stages:
            reports = await self._run_stages(question, candidates, timings)
        return self._decide(question, sources, candidates, failures, reports, timings, started)

    async def route_many(
        self, questions: Sequence[str], sources: Sequence[TemplateSource], vectors: Mapping[str, np.ndarray]
    ) -> list[RoutingOutcome]:
        """Route several questions whose vectors are given (`vectors[model_id]`: one row per question), as
        `route` would route each (fit-thresholds replays the server's decisions this way): each question is
        searched and then combined, ranked and decided by the same code as `route`, and the stages' arithmetic
        runs over all the questions at once. Without every model's vectors, the questions go through `route`
        one by one (it embeds what is missing)."""
        if any(s.embedder.model_id not in vectors for s in sources):
            return [
                await self.route(q, sources, {m: v[i] for m, v in vectors.items()}) for i, q in enumerate(questions)
            ]
        started = time.perf_counter()
        together = self._search_together_many(sources, vectors, len(questions))
        searched = [
            await self._search(sources, {m: v[i] for m, v in vectors.items()}, together[i])
            for i in range(len(questions))
        ]
        search_ms = _ms(started) / max(1, len(questions))
        timings: list[dict[str, float]] = [{"embed": 0.0, "search": search_ms} for _ in questions]
        reports: list[list[StageReport]] = [[] for _ in questions]
        judged = [i for i, (candidates, _) in enumerate(searched) if candidates]
        for stage in self.stages if judged else []:
            t = time.perf_counter()
            done = await stage.score_many([questions[i] for i in judged], [searched[i][0] for i in judged])
            for i, report in zip(judged, done, strict=True):
                reports[i].append(report)
                timings[i][stage.name] = _ms(t) / len(judged)
        return [
            self._decide(q, sources, candidates, failures, reports[i], timings[i], started)
            for i, (q, (candidates, failures)) in enumerate(zip(questions, searched, strict=True))
        ]

    def batch_key(self) -> tuple[int, ...]:
        """What this router routes with (its search and stages): routers with equal keys share batches."""
        return (id(self.group_search), *map(id, self.stages))

    def _batchable(
        self, sources: Sequence[TemplateSource], vectors: Mapping[str, np.ndarray], failures: list[SourceFailure]
    ) -> bool:
        """Whether `route_batch` can take the question: two or more in-memory sources of one embedding model
        that has its vector, searched as a stacked view, and only local stages."""
        models = {s.embedder.model_id for s in sources}
        return (
            self.group_search is not None
            and not failures
            and len(sources) >= 2
            and len(models) == 1
            and next(iter(models)) in vectors
            and all(s.searches_inline for s in sources)
            and all(isinstance(stage, LocalStage) for stage in self.stages)
        )

    async def route_batch(self, batch: Sequence[Asked]) -> list[RoutingOutcome]:
        """The questions of one loop turn (one encoder batch, the same sources, `_batchable`), routed as
        `route` routes each: the stacked search, the candidates and every stage's arithmetic in ONE job on the
        search pool when the search leaves the event loop (routing/batches.py), else the search in place and
        the stages' arithmetic in place or in one job on a scoring thread. Each question then decided alone."""
        sources = batch[0].sources
        if len({np.shape(a.vector) for a in batch}) != 1:  # a refused vector: each searched on its own
            model_of = sources[0].embedder.model_id
            return [
                await self._route_embedded(a.question, sources, {model_of: a.vector}, [], a.timings, a.started)
                for a in batch
            ]
        group, model = self.group_search, sources[0].embedder.model_id
        assert group is not None
        questions = [a.question for a in batch]
        stores = [s.store for s in sources]
        stages = [stage for stage in self.stages if isinstance(stage, LocalStage)]
        fetched = [await stage.prefetch(questions) for stage in stages]
        vectors = np.stack([a.vector for a in batch])
        k = self.policy.max_templates_per_source
        usable = list(enumerate(sources))

        def search() -> tuple[list[tuple[list[Candidate], list[SourceFailure]]], float]:
            found = group.search_many(model, stores, vectors, k)
            done = time.perf_counter()
            return [self._collect(usable, row, {model: v}) for row, v in zip(found, vectors, strict=True)], done

        def score(searched: list[tuple[list[Candidate], list[SourceFailure]]]):
            """Each stage's work over the questions `prefetch` got (what it fetched is by their position); a
            question without candidates keeps no report, as on the step-by-step path."""
            judged = [i for i, (candidates, _) in enumerate(searched) if candidates]
            reports: list[list[StageReport]] = [[] for _ in batch]
            spent: dict[str, float] = {}
            for stage, got in zip(stages, fetched, strict=True):
                t = time.perf_counter()
                done = stage.work(questions, [candidates for candidates, _ in searched], got) if judged else []
                for i in judged:
                    reports[i].append(done[i])
                spent[stage.name] = _ms(t)
            return reports, spent

        def both():
            searched, done = search()
            return searched, done, *score(searched)

        if group.leaves_loop(model, stores, len(batch)):
            searched, searched_at, reports, spent = await run_on(SEARCH_POOL, both)
        else:
            searched, searched_at = search()
            judged = [(q, c) for q, (c, _) in zip(questions, searched, strict=True) if c]
            heavy = any(
                stage.heavy([q for q, _ in judged], [c for _, c in judged], got)
                for stage, got in zip(stages, fetched, strict=True)
            )
            reports, spent = await run_on(SCORING_POOL, score, searched) if heavy else score(searched)
        outcomes = []
        for asked, (candidates, failures), stage_reports in zip(batch, searched, reports, strict=True):
            timings = asked.timings
            timings["search"] = round((searched_at - asked.submitted) * 1000, 3)
            if candidates:
                timings.update(spent)
            outcomes.append(
                self._decide(asked.question, sources, candidates, failures, stage_reports, timings, asked.started)
            )
        return outcomes

    def _decide(
        self,
        question: str,
        sources: Sequence[TemplateSource],
        candidates: list[Candidate],
        failures: list[SourceFailure],
        reports: list[StageReport],
        timings: dict[str, float],
        started: float,
    ) -> RoutingOutcome:
        """Combine the stages' scores, rank and decide: the one ending of `route` and `route_many`."""
        if candidates and self.stages:
            failed = frozenset(r.stage for r in reports if r.error)
            combine(candidates, self.weights(), self.policy.retrieval.scoring, failed)
        t = time.perf_counter()
        ranked, write = refuse_write_requests(question, rank(candidates, self.policy))
        ranked, other_end = refuse_other_end(question, ranked, self.policy.confidence_threshold)
        ranked, counted = prefer_count_template(question, ranked, sources)
        decision = decide(ranked, self.policy, write)
        timings["decision"] = _ms(t)
        timings["total"] = _ms(started)
        searched = [s.name for s in sources]
        outcome = RoutingOutcome(
            question, ranked, decision, searched, failures, reports, timings, counted, write, other_end
        )
        if self.policy.verbose:
            _log_verbose(outcome, self.policy)
        return outcome

    async def _run_stages(self, question: str, candidates: list[Candidate], timings: dict[str, float]):
        """In order, or (performance.parallel_rerank) all at once so the reranker's network wait
        overlaps the local stages' work."""

        async def timed(stage: ScoringStage) -> StageReport:
            t = time.perf_counter()
            report = await stage.score_request(question, candidates)
            timings[stage.name] = _ms(t)
            return report

        if self.policy.retrieval.performance.parallel_rerank and len(self.stages) > 1:
            # network stages first, so their requests are in flight while the local stages compute
            ordered = sorted(self.stages, key=lambda s: not s.remote)
            reports = dict(zip(ordered, await asyncio.gather(*(timed(s) for s in ordered)), strict=True))
            return [reports[s] for s in self.stages]
        return [await timed(stage) for stage in self.stages]

    async def _embed(self, question: str, sources: Sequence[TemplateSource], given: Mapping[str, np.ndarray]):
        """One embedding per distinct model among the sources (one in the usual case)."""
        by_model: dict[str, Embedder] = {}
        for source in sources:
            if source.embedder.model_id not in given:
                by_model.setdefault(source.embedder.model_id, source.embedder)
        vectors: dict[str, np.ndarray] = dict(given)
        failures: list[SourceFailure] = []
        for model_id, embedder in by_model.items():
            try:
                vectors[model_id] = await embedder.embed_query(question)
            except Exception as exc:  # an embedding provider down must not hide the other models
                log.warning("embedding with %s failed: %s", model_id, exc)
                for source in sources:
                    if source.embedder.model_id == model_id:
                        failures.append(SourceFailure(source.name, f"embedding failed: {_reason(exc)}", "embedding"))
        return vectors, failures

    async def _search(
        self,
        sources: Sequence[TemplateSource],
        vectors: dict[str, np.ndarray],
        together: _Together,
    ):
        """`together`: the in-memory sources' results, already searched as stacked views (`route`: with the
        concurrent requests' questions; `route_many`: for all its questions at once)."""
        k = self.policy.max_templates_per_source
        timeout = self.policy.search_timeout
        usable = [(i, s) for i, s in enumerate(sources) if s.embedder.model_id in vectors]

        async def one(source: TemplateSource):
            return await asyncio.wait_for(source.search_templates(vectors[source.embedder.model_id], k), timeout)

        # In-memory searches are microseconds of arithmetic that no timeout could interrupt: they run
        # in place, in config order (stacked per embedding model when a composite has a GroupSearch);
        # only searches that wait (threads, network) get tasks and timeouts.
        def inline(source: TemplateSource):
            if id(source) in together:
                return together[id(source)]
            try:
                return source.search_inline(vectors[source.embedder.model_id], k)
            except Exception as exc:
                return exc

        waiting = [s for _, s in usable if not s.searches_inline]
        if self.policy.parallel_search:
            waited = iter(await asyncio.gather(*(one(s) for s in waiting), return_exceptions=True))
            results = [inline(s) if s.searches_inline else next(waited) for _, s in usable]
        else:
            results = []
            for _, source in usable:
                if source.searches_inline:
                    results.append(inline(source))
                    continue
                try:
                    results.append(await one(source))
                except Exception as exc:
                    results.append(exc)
        return self._collect(usable, results, vectors)

    def _collect(
        self,
        usable: Sequence[tuple[int, TemplateSource]],
        results: Sequence[list[StoreHit] | BaseException],
        vectors: Mapping[str, np.ndarray],
    ) -> tuple[list[Candidate], list[SourceFailure]]:
        """Each source's hits as candidates (its order in the config kept), its error as a failure."""
        timeout = self.policy.search_timeout
        candidates: list[Candidate] = []
        failures: list[SourceFailure] = []
        for (order, source), result in zip(usable, results, strict=True):
            if isinstance(result, BaseException):
                if isinstance(result, asyncio.CancelledError):
                    raise result
                reason = (
                    f"search timed out after {timeout:g} s"
                    if isinstance(result, TimeoutError)
                    else f"search failed: {_reason(result)}"
                )
                log.warning("template search in %s: %s", source.name, reason)
                failures.append(
                    SourceFailure(source.name, reason, "timeout" if isinstance(result, TimeoutError) else "search")
                )
                continue
            calibration = self.calibrations.get(source.embedder.model_id)
            for hit in result:
                template = source.templates.get(hit.template_id)
                if template is not None:
                    candidates.append(
                        Candidate(
                            source.name,
                            template,
                            calibration.apply(hit.score) if calibration else hit.score,
                            hit.matched_text,
                            order,
                            query_vector=vectors[source.embedder.model_id],
                            raw_embedding_score=hit.score if calibration else None,
                        )
                    )
        return candidates, failures

    async def _search_together(self, sources: Sequence[TemplateSource], vectors: dict[str, np.ndarray]) -> _Together:
        """id(source) -> its hits or error, for the in-memory sources of each embedding model at once (the
        stacked searches of concurrent requests share one call: GroupSearch.search_request)."""
        inline = _inline(sources, vectors)
        k = self.policy.max_templates_per_source
        if self.group_search is None or len(inline) < 2:
            if not searches_off_loop([s.store for s in inline]):
                return {}  # each searched in place by `_search`
            return dict(zip(map(id, inline), await run_on(SEARCH_POOL, _search_each, inline, vectors, k), strict=True))
        found: _Together = {}
        for model, group in _by_model(inline).items():
            results = await self.group_search.search_request(model, [s.store for s in group], vectors[model], k)
            found.update(zip(map(id, group), results, strict=True))
        return found

    def _search_together_many(
        self, sources: Sequence[TemplateSource], vectors: Mapping[str, np.ndarray], n: int
    ) -> list[_Together]:
        """`_search_together` for n questions (`vectors[model]`: one row each), each model's stacked view
        searched for all of them in one call."""
        found: list[_Together] = [{} for _ in range(n)]
        inline = _inline(sources, vectors)
        if self.group_search is None or len(inline) < 2:
            return found
        k = self.policy.max_templates_per_source
        for model, group in _by_model(inline).items():
            results = self.group_search.search_many(model, [s.store for s in group], vectors[model], k)
            for i, row in enumerate(results):
                found[i].update(zip(map(id, group), row, strict=True))
        return found


def _search_each(sources: Sequence[TemplateSource], vectors: Mapping[str, np.ndarray], k: int) -> list:
    """Each in-memory source's hits (or the error its search raised), run where the caller put it."""
    out: list[list[StoreHit] | Exception] = []
    for source in sources:
        try:
            out.append(source.search_inline(vectors[source.embedder.model_id], k))
        except Exception as exc:
            out.append(exc)
    return out


def _inline(sources: Sequence[TemplateSource], vectors: Mapping[str, np.ndarray]) -> list[TemplateSource]:
    """The sources searched in place (in memory) that have the question's vector: a composite stacks these."""
    return [s for s in sources if s.searches_inline and s.embedder.model_id in vectors]


def _by_model(sources: list[TemplateSource]) -> dict[str, list[TemplateSource]]:
    by_model: dict[str, list[TemplateSource]] = {}
    for source in sources:
        by_model.setdefault(source.embedder.model_id, []).append(source)
    return by_model


def _reason(exc: BaseException) -> str:
    message = getattr(exc, "reason", None) or getattr(exc, "message", None)
    return str(message) if message else type(exc).__name__


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _log_verbose(outcome: RoutingOutcome, policy: RoutingPolicy) -> None:
    log.info("[Composite] Processing query: '%s'", outcome.question)
    log.info("[Composite] Searching across %d adapters: %s", len(outcome.adapters_searched), outcome.adapters_searched)
    chosen = outcome.decision.selected
    if chosen is None:
        log.info(
            "[Composite] No template above threshold %.3f (%s)", policy.confidence_threshold, outcome.decision.reason
        )
        return
    log.info("[Composite] Routed to: %s", chosen.adapter)
    log.info("[Composite] Template: %s", chosen.template.id)
    log.info("[Composite] Total matches: %d", len(outcome.candidates))
    if policy.multistage:
        log.info("[Composite] Combined Score: %.3f", chosen.score)
        for stage, score in chosen.all_stage_scores().items():
            log.info("[Composite]   - %s: %.3f", stage.replace("_", " ").title(), score)
    else:
        log.info("[Composite] Score: %.3f", chosen.embedding_score)
