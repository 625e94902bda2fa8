"""Prometheus metrics at `GET /metrics` (official prometheus_client, one registry per app).

What is measured, and where it comes from:
- HTTP requests by endpoint (the route's path pattern, so the label set stays bounded), method and
  status, and their duration: a middleware around every handler;
- decisions by kind (query / test_routing, from HTTP or MCP), outcome and adapter, stage latencies and per-source
  query latency: the same answer hook the routing log uses;
- source failures (503/504/502 errors that name an adapter): the middleware, before the error
  becomes a JSON body; a fan-out answer's sources (each one's query time, failure and status) from the
  answer hook, or from the middleware when no source answered;
- reloads by trigger and result: the runtime holder's load listeners;
- routing-log queue depth, capacity, drops, writes and failed writes: read from the log at scrape time;
- encoder batches for questions (calls, questions carried, largest batch) per model, and the same for
  a composite's batching stages (the intent model scores concurrent requests' questions together):
  read from the embedders' question batchers and the stages at scrape time;
- MCP sessions (open per key, caps, saturation, opened / refused / closed to make room): read from `/mcp`'s
  session ledger at scrape time (mcp_metrics.py);
- the in-process caches' bytes, bounds and entries (result cache, embedding vectors): cache_metrics.py.

A registry per app (never the process-wide default) lets several apps live in one process (tests).
With auth on, `/metrics` needs the stats or admin key, as the statistics routes do.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..api.outcome import SourceStatus
from ..auth import Role, authenticate, require
from ..embedding.batching import BatchStats
from ..errors import IntentRouterError
from ..runtime.build import Runtime
from ..runtime.holder import LoadStatus, RuntimeHolder
from ..service.answer import Answer
from ..service.observers import Answered, AnswerObserver
from .cache_metrics import CacheMemoryCollector
from .mcp_metrics import MCPSessionCollector
from .routing_log import STATS_LOG

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _RoutingLogCollector(Collector):
    """Reads the routing log's queue and counters when Prometheus scrapes (nothing to keep in sync)."""

    def __init__(self, app: web.Application) -> None:
        self.app = app

    def collect(self) -> Iterator[Any]:
        rlog = self.app.get(STATS_LOG)
        if rlog is None:
            return
        status = rlog.queue_figures()
        yield GaugeMetricFamily(
            "intent_router_routing_log_queue_length", "Entries waiting to be written", value=status["queue_length"]
        )
        yield GaugeMetricFamily(
            "intent_router_routing_log_queue_capacity",
            "Queue size; beyond it entries are dropped",
            value=status["queue_capacity"],
        )
        for name, key, doc in (
            ("dropped", "dropped", "Entries dropped because the queue was full or the log closed"),
            ("written", "written", "Entries written to the routing log database"),
            ("write_failures", "failed", "Entries in batches the routing log database refused"),
        ):
            yield CounterMetricFamily(f"intent_router_routing_log_{name}", doc, value=status[key])


def _question_batcher(embedder: Any) -> Any:
    """The question micro-batcher behind an embedder (through the cache wrapper), if it has one."""
    inner = getattr(embedder, "inner", embedder)
    return getattr(getattr(inner, "model", None), "questions", None)


def _lane_families(rows: list[tuple[list[str], Any]]) -> Iterator[Any]:
    """The local encoder's lanes (embedding/lanes.py): how many are open, and the calls they ran."""
    open_lanes = GaugeMetricFamily("intent_router_encoder_lanes", "Encoder lanes open", labels=["model"])
    passes = CounterMetricFamily(
        "intent_router_encoder_lane_question_batches",
        "Of the encoder's calls for questions, those run on a lane",
        labels=["model"],
    )
    for values, batcher in rows:
        open_lanes.add_metric(values, batcher.lanes)
        passes.add_metric(values, batcher.stats.lane_calls)
    yield from (open_lanes, passes)


def _batch_families(what: str, labels: list[str], rows: list[tuple[list[str], BatchStats]]) -> Iterator[Any]:
    """Calls made for questions by one kind of batcher, the questions they carried and the largest batch:
    the mean batch size is `rate(questions) / rate(calls)`."""
    calls = CounterMetricFamily(
        f"intent_router_{what}_question_batches", f"{what.capitalize()} calls made for questions", labels=labels
    )
    questions = CounterMetricFamily(
        f"intent_router_{what}_questions", "Questions carried by those calls", labels=labels
    )
    largest = GaugeMetricFamily(
        f"intent_router_{what}_largest_question_batch", f"Most questions in one {what} call", labels=labels
    )
    for values, stats in rows:
        calls.add_metric(values, stats.calls)
        questions.add_metric(values, stats.questions)
        largest.add_metric(values, stats.largest)
    yield from (calls, questions, largest)


class _BatchCollector(Collector):
    """Read at scrape time: the encoder's question batches per model, and per composite the shared calls
    of concurrent requests: the stacked template search (stage "search") and the batching stages' `score_many`."""

    def __init__(self, holder: RuntimeHolder) -> None:
        self.holder = holder

    def collect(self) -> Iterator[Any]:
        try:
            runtime: Runtime | None = self.holder.current
        except RuntimeError:  # no config loaded: the families, empty
            runtime = None
        encoders: dict[int, tuple[list[str], Any]] = {}  # the question batchers, by identity
        stages: list[tuple[list[str], BatchStats]] = []
        if runtime is not None:
            for embedder in runtime.embedders.values():
                batcher = _question_batcher(embedder)
                if batcher is not None:
                    encoders.setdefault(id(batcher), ([str(getattr(embedder, "model_id", "unknown"))], batcher))
            for name, adapter in runtime.adapters.items():
                group = adapter.group_search()
                if group is not None and group.requests.stats.calls:
                    stages.append(([name, "search"], group.requests.stats))
                batches = adapter.routing_batches()
                if batches is not None and batches.requests.stats.calls:
                    stages.append(([name, "routing"], batches.requests.stats))
                stages += [([name, s.name], s.coalescing) for s in adapter.routing_stages() if s.coalescing is not None]
        yield from _batch_families("encoder", ["model"], [(labels, b.stats) for labels, b in encoders.values()])
        yield from _lane_families(list(encoders.values()))
        yield from _batch_families("stage", ["adapter", "stage"], stages)


class _Children:
    """A labelled metric's children by label values, kept: `labels()` validates and locks on every call,
    which cost the request path about 2 us per metric fed (nine a question). Label values are bounded by
    the metric's own label set, so the dict is too."""

    def __init__(self, metric: Any) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def labels(self, *values: str) -> Any:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self.metric.labels(*values)
        return child


class Metrics(AnswerObserver):
    def __init__(self, app: web.Application, holder: RuntimeHolder) -> None:
        self.registry = CollectorRegistry()
        r = self.registry

        def latency(name: str, documentation: str, label: str) -> _Children:
            """A duration histogram in seconds on LATENCY_BUCKETS, one label."""
            return _Children(Histogram(name, documentation, [label], buckets=LATENCY_BUCKETS, registry=r))

        self.requests = _Children(
            Counter("intent_router_http_requests", "HTTP requests", ["endpoint", "method", "status"], registry=r)
        )
        self.request_seconds = latency(
            "intent_router_http_request_duration_seconds", "HTTP request duration", "endpoint"
        )
        self.decisions = _Children(
            Counter(
                "intent_router_decisions", "Routing decisions by outcome", ["kind", "outcome", "adapter"], registry=r
            )
        )
        self.stage_seconds = latency(
            "intent_router_stage_duration_seconds",
            "Time per pipeline stage (embed, search, scoring stages, decision, parameters, execute, total)",
            "stage",
        )
        self.source_seconds = latency(
            "intent_router_source_query_duration_seconds",
            "Query time per data source (adapter that executed the template)",
            "source",
        )
        self.source_failures = _Children(
            Counter(
                "intent_router_source_failures", "Failed source queries by error code", ["source", "code"], registry=r
            )
        )
        self.fan_out_sources = _Children(
            Counter(
                "intent_router_fan_out_source_queries",
                "Sources run by fan-out answers, by status (ok, needs_clarification, timeout, error)",
                ["source", "status"],
                registry=r,
            )
        )
        self.reloads = Counter(
            "intent_router_reloads", "Config loads by trigger and result", ["trigger", "result"], registry=r
        )
        self.generation = Gauge("intent_router_config_generation", "Which config generation serves", registry=r)
        r.register(_RoutingLogCollector(app))
        r.register(_BatchCollector(holder))
        r.register(MCPSessionCollector(app, holder))
        r.register(CacheMemoryCollector(holder))

    # --- feeds ------------------------------------------------------------------------------------
    def answered(self, event: Answered) -> None:
        """Decisions, stage and source times of an answered question."""
        kind, adapter, result = event.kind, event.adapter, event.result
        timings = result.timings_ms
        if isinstance(result, Answer):
            source = result.response.metadata.executed_by
            if source and "execute" in timings:
                self.source_seconds.labels(source).observe(timings["execute"] / 1000)
        if result.sources:
            self.fanned_out(result.sources)
        self.decisions.labels(kind, result.status.value, adapter.name).inc()
        for stage, ms in timings.items():
            self.stage_seconds.labels(stage).observe(ms / 1000)

    def fanned_out(self, sources: list[dict[str, Any]]) -> None:
        """Each source of a fan-out answer (service/fan_out.py `log_entry`): a query like a route-once answer's
        (its time, its failure by code), and its status. One that asked for missing values ran no query."""
        for source in sources:
            name, status = source["adapter"], source["status"]
            self.fan_out_sources.labels(name, status).inc()
            if status != SourceStatus.NEEDS_CLARIFICATION:
                self.source_seconds.labels(name).observe(source["latency_ms"] / 1000)
            if source.get("code"):
                self.source_failures.labels(name, source["code"]).inc()

    def on_load(self, status: LoadStatus) -> None:
        self.reloads.labels(status.trigger, "ok" if status.ok else "rejected").inc()
        self.generation.set(status.generation)

    def source_failed(self, exc: IntentRouterError) -> None:
        fanned = getattr(exc, "sources", None)
        if fanned is not None:  # a fan-out answer no source answered: each source's failure, not the composite's
            self.fanned_out(fanned)
            return
        source = getattr(exc, "adapter", None)
        if isinstance(source, str):
            self.source_failures.labels(source, exc.code).inc()

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except IntentRouterError as exc:
            status = exc.status
            self.source_failed(exc)
            raise
        except web.HTTPException as exc:
            status = exc.status
            raise
        finally:
            route = request.match_info.route
            endpoint = route.resource.canonical if route.resource is not None else "unmatched"
            self.requests.labels(endpoint, request.method, str(status)).inc()
            self.request_seconds.labels(endpoint).observe(time.perf_counter() - started)

    def render(self) -> bytes:
        return generate_latest(self.registry)


METRICS = web.AppKey("metrics", Metrics)


def install_metrics(app: web.Application, holder: RuntimeHolder, observers: list[AnswerObserver]) -> Metrics:
    """Middleware, answer observer, reload listener and `GET /metrics` (call before the app starts)."""
    metrics = Metrics(app, holder)
    app[METRICS] = metrics
    app.middlewares.append(metrics.middleware)
    observers.append(metrics)
    holder.load_listeners.append(metrics.on_load)
    metrics.generation.set(holder.generation)

    async def scrape(request: web.Request) -> web.Response:
        require(authenticate(request, holder.current.config.app.auth), Role.STATS)
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def forget(_: web.Application) -> None:
        if metrics.on_load in holder.load_listeners:
            holder.load_listeners.remove(metrics.on_load)

    app.router.add_get("/metrics", scrape)
    app.on_cleanup.append(forget)
    return metrics
