"""Response bodies (see wire.py for how optional keys are sent)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from .outcome import AnswerReason, DecisionReason, Outcome, SourceStatus
from .parameters import ClarificationView, ExtractedValueView, LeftOutView
from .wire import Json, Wire


class ErrorDetail(Wire):
    code: str = Field(description="machine-readable error code, e.g. bad_request, source_unavailable")
    message: str
    adapter: str | None = None


class ErrorResponse(Wire):
    error: ErrorDetail


class SourceFailureView(Wire):
    adapter: str
    reason: str


class StageError(Wire):
    stage: str
    error: str


class AlternativeView(Wire):
    adapter: str
    template_id: str
    description: str
    score: float | None


class MultistageScoring(Wire):
    """The seed design's format, plus every stage's score by name in `stage_scores`."""

    enabled: bool
    combined_score: float | None
    embedding_score: float | None
    rerank_score: float | None
    string_similarity_score: float | None
    intent_model_score: float | None = None
    stage_scores: dict[str, float] = Field(default_factory=dict)
    scoring_details: Json


class CountQuestionView(Wire):
    """A count question routed to a list template, answered by the template that counts that list
    (`counts: <list id>`), or a question for the rows routed to the count template, answered by its list;
    the scores shown are the ones the template routed to earned."""

    # the rule: routing/count_questions.py (docstrings here are OpenAPI descriptions, which name no source files)

    cue: str = Field(
        description='the words that asked for a number ("how many", "number of", "count", "headcount") or for the '
        'rows ("list", or "show", "give me", "display" with "all", "the first" or a number)'
    )
    adapter: str
    list_template: str = Field(description="the list template (the count template counts it)")
    count_template: str = Field(description="the template that counts the list")
    answered_by: Literal["count", "list"] = Field(
        "count", description="which of the two answers: the count (for a number) or the list (for the rows)"
    )


class WriteRequestView(Wire):
    """A question that asks for a change (an imperative write verb): the candidates whose texts never use
    that verb (or one of its kind) were taken out, so nothing that only reads ran."""

    # the rule: routing/write_requests.py

    verb: str = Field(description='the write verb the question asks to carry out ("delete", "drop", "cancel", ...)')
    refused: list[str] = Field(description="the candidates taken out, best first, as adapter/template_id")


class RankingEndView(Wire):
    """A question that asks for one end of a ranking ("the lowest salary"): the candidates whose id or description
    name only the other end ("top_earners") were taken out, so no answer ranks from the wrong end."""

    # the rule: routing/ranking_ends.py

    asked: str = Field(description='the end the question asks for: "highest" or "lowest"')
    refused: list[str] = Field(description="the candidates taken out, best first, as adapter/template_id")
    would_have_run: bool = Field(description="the best of them was ranked first and cleared the threshold")


class CompositeRouting(Wire):
    selected_adapter: str | None
    template_id: str | None
    similarity_score: float | None
    adapters_searched: list[str]
    total_matches_found: int
    adapters_failed: list[SourceFailureView]
    reason: DecisionReason
    multistage_scoring: MultistageScoring | None = None
    stage_errors: list[StageError] | None = None
    alternatives: list[AlternativeView] | None = None
    count_question: CountQuestionView | None = None
    write_request: WriteRequestView | None = None
    ranking_end: RankingEndView | None = None


class SessionTurnView(Wire):
    """This message's place in its conversation."""

    session_id: str
    turn: int = Field(description="messages answered in this session, this one included")
    follow_up: Literal["clarification", "choice", "follow_up", "correction", "expired"] | None = Field(
        None,
        description="the message answered the pending clarification, picked a listed alternative, changed a value "
        "of the last answer (follow_up, correction), or answered a question whose template a reload removed",
    )
    completes_turn: int | None = Field(None, description="the turn whose clarification or choice it answered")
    changed: list[str] | None = Field(None, description="follow_up / correction: the parameters the message gave")
    carried: list[str] | None = Field(None, description="follow_up / correction: the values kept from the last answer")


class SourceSection(Wire):
    """A fan-out answer's part from one source: the template it ran, its scores and its rows."""

    adapter: str
    template_id: str
    description: str
    status: SourceStatus
    score: float = Field(description="the template's combined score (what min_score is compared with)")
    stage_scores: dict[str, float]
    parameters: Json | None = None
    rows: list[Json] = Field(default_factory=list)
    columns: list[str] | None = None
    truncated: bool | None = None
    from_cache: bool | None = None
    clarification: list[ClarificationView] | None = Field(
        None, description="what is missing (status needs_clarification)"
    )
    error: str | None = None


class SourceStat(Wire):
    """How one source did in a fan-out answer."""

    adapter: str
    status: SourceStatus
    rows: int
    latency_ms: float
    error: str | None


class FanOutCandidate(Wire):
    adapter: str
    template_id: str
    score: float | None
    reason: Literal["runs", "below_min_score", "over_max_sources"]


class FanOutPlanView(Wire):
    """test_routing under fan_out: which children's best templates would run, and why the others would not."""

    min_score: float
    max_sources: int
    would_run: list[FanOutCandidate]
    left_out: list[FanOutCandidate]


class EachValueView(Wire):
    """The question named several values of a one-value parameter: the template ran once per value."""

    parameter: str
    values: list[JsonValue] = Field(description="the values, in the question's order; each row carries its value")


class QueryMetadata(Wire):
    source: str = "intent"
    adapter: str
    template_id: str | None
    reason: DecisionReason | AnswerReason = Field(
        description="the routing decision's reason, or what the answer did beyond it (fan-out, a follow-up)"
    )
    normalised_query: str | None = None  # what routing saw, when normalisation changed the question
    status: Outcome | None = None
    composite_routing: CompositeRouting | None = None
    similarity_score: float | None = None
    alternatives: list[AlternativeView] | None = None
    best_candidates: list[AlternativeView] | None = None
    parameters: Json | None = None
    extraction: list[ExtractedValueView] | None = Field(
        None, description="per filled value: the extractor (a reader, 'learned', 'default'), span, score, learned"
    )
    extraction_left_out: list[LeftOutView] | None = Field(
        None, description="values seen in the question and not used (an optional value the model placed nowhere)"
    )
    extraction_llm: Json | None = None
    clarification: list[ClarificationView] | None = Field(
        None, description="what is missing or wrong (status needs_clarification)"
    )
    executed_by: str | None = None
    row_count: int | None = None
    truncated: bool | None = None
    total_rows: int | None = Field(
        None, description='a "how many" question answered by a cut list: all the rows the list holds, counted'
    )
    from_cache: bool | None = None  # the rows came from the result cache; the source was not asked
    columns: list[str] | None = None
    timings_ms: dict[str, float] | None = None
    session: SessionTurnView | None = None
    each_value: EachValueView | None = Field(
        None, description="several values named for a one-value parameter ('Sales and Marketing'): one run each"
    )
    execution: Literal["route_once", "fan_out"] | None = None  # set for fan_out answers
    duplicates_merged: int | None = Field(None, description="fan_out: rows merged into another by dedupe_key")


class QueryResponse(Wire):
    """Body of `POST /v1/query` and the MCP `ask` tool's structured result."""

    content: str = Field(description="a readable answer: a table or summary of the rows, or what is missing")
    rows: list[Json]
    metadata: QueryMetadata
    confidence: float
    status: Outcome = Field(description="what became of the question (the same as metadata.status)")
    session_id: str | None = Field(None, description="send it with the next message to continue this conversation")
    sections: list[SourceSection] | None = Field(
        None, description="fan_out: one section per source that ran (rows, template, scores, status)"
    )
    source_stats: list[SourceStat] | None = Field(None, description="fan_out: each source's status, rows, latency")


class AcceptanceView(Wire):
    """The in-scope test's verdict on a candidate and the features behind it."""

    # the test: intent/acceptance.py

    template_id: str
    probability: float | None
    threshold: float | None
    accepted: bool | None
    parts: Json


class MatchView(Wire):
    template_id: str
    source_adapter: str
    embedding_score: float | None
    combined_score: float | None
    rerank_score: float | None
    string_similarity_score: float | None
    intent_model_score: float | None = None
    stage_scores: dict[str, float]
    description: str
    nl_examples: list[str] = Field(description='the first example only, unless the request asked "detail": "full"')
    nl_examples_total: int = Field(description="how many examples the template has")
    matched_text: str
    above_threshold: bool
    scoring_details: Json
    acceptance: AcceptanceView | None = None


class RoutingDecisionView(Wire):
    would_route_to: str | None
    selected_template: str | None
    selection_score: float | None
    embedding_score: float | None
    rerank_score: float | None
    string_similarity_score: float | None
    stage_scores: dict[str, float]
    reason: DecisionReason
    would_execute: bool
    acceptance: AcceptanceView | None = None  # the in-scope test's verdict on the top candidate, when on
    alternatives: list[AlternativeView] | None = None
    parameters: Json | None = None
    count_question: CountQuestionView | None = Field(
        None, description="set when a count question was given the count template of the list it routed to"
    )
    write_request: WriteRequestView | None = Field(
        None, description="set when the question asks to change data: the templates that only read were taken out"
    )
    ranking_end: RankingEndView | None = Field(
        None,
        description="set when the question asks for one end of a ranking and templates ranking from the other "
        "end were taken out",
    )


class RoutingConfigurationView(Wire):
    confidence_threshold: float
    adapters_searched: list[str]
    multistage_enabled: bool
    reranking_enabled: bool
    string_similarity_enabled: bool
    ambiguity_margin: float | None
    intent_model_enabled: bool
    acceptance_enabled: bool
    scoring_weights: dict[str, float]


class RoutingExplanation(Wire):
    query: str
    normalised_query: str | None = None
    adapter: str
    total_matches: int
    matches_above_threshold: int
    all_matches: list[MatchView]
    routing_decision: RoutingDecisionView
    adapters_failed: list[SourceFailureView]
    stage_errors: list[StageError]
    timings_ms: dict[str, float]
    configuration: RoutingConfigurationView
    fan_out: FanOutPlanView | None = None  # a composite under fan_out: the sources that would run


class LoadStatusView(Wire):
    """One config load: also the body of `POST /admin/reload` (200 when ok, 422 when it was refused)."""

    ok: bool
    at: float
    seconds: float
    errors: list[Json]
    changes: Json
    trigger: str = Field(description="start | watch | admin | cluster (announced by another replica)")
    generation: int
    config_hash: str | None = Field(None, description="content hash of the config serving after this load")
    restart_required: list[str] = Field(
        default_factory=list,
        description="config.yaml keys changed since the server started that apply only after a restart "
        "(server.host, server.port, stats.enabled/url/path/table/queue_size, cluster)",
    )
    warnings: list[str] = Field(
        default_factory=list, description="loaded, but worth fixing (e.g. a composite mixing embedding models)"
    )


class LoadSummaryView(Wire):
    """One config load as /health shows it to a key that is not the admin key: whether it worked and when,
    not what it found (its errors name files, lines and keys; its changes and warnings name adapters the key
    may not know about)."""

    ok: bool
    at: float
    seconds: float
    trigger: str = Field(description="start | watch | admin | cluster (announced by another replica)")
    generation: int
    config_hash: str | None = Field(None, description="content hash of the config serving after this load")
    error_count: int = Field(description="how many errors refused the load (the admin key sees them)")


class ConfigHealth(Wire):
    last_load: LoadStatusView | LoadSummaryView | None = Field(
        description="the whole load status for the admin key, a summary (LoadSummaryView) for other keys"
    )
    last_good_load: LoadStatusView | LoadSummaryView | None
    restart_required: list[str] = Field(
        default_factory=list, description="config.yaml keys of the serving config that need a restart to apply"
    )


class HealthResponse(Wire):
    """With auth on, a request without a key gets `status` only; the details need a valid key."""

    status: str = Field(description="ok | degraded")
    adapters: dict[str, Json] | None = Field(None, description="each adapter's check (with a key when auth is on)")
    routing_log: Json | None = Field(
        None, description="the routing log's writes and failures, or {enabled: false} (with a key when auth is on)"
    )
    config: ConfigHealth | None = Field(None, description="the last config loads (with a key when auth is on)")
    cluster: Json | None = Field(
        None,
        description="with cluster.enabled: this replica's name, the bus engine and its state, and problems "
        "(bus unreachable, config differing from the one another replica announced) (with a key when auth is on)",
    )
    shared: Json | None = Field(
        None,
        description="engines shared with other replicas (sessions, result_cache, rerank_cache, embedding_cache "
        "on Redis; routing_log on a database server), each {status: ok | down, backend, reason?}; one down "
        "makes the status degraded while the replica answers with local state (with a key when auth is on)",
    )
    mcp: Json | None = Field(
        None,
        description="MCP over streamable HTTP at /mcp: {status: starting | ok | saturated | down, reason?, "
        "transport: stateful | stateless, sessions?: {open, idle, max_sessions, max_sessions_per_key, keys_at_cap, "
        "opened, refused, closed_for_room}}; down (it could not start, /mcp answers 503) and saturated (the "
        "stateful transport holds mcp.max_sessions sessions) make the status degraded (with a key when auth is on)",
    )
    encoder_tune: Json | None = Field(
        None,
        description="with tune.on_reload (or once a background tune ran): {on_reload, status: idle | waiting |"
        " running | done | failed, templates_hash, started_at, finished_at, seconds, steps, runs, message (admin key"
        " only: why it failed)} (with a key when auth is on)",
    )
    config_hash: str | None = Field(
        None,
        description="content hash of the config files this replica serves (config.yaml, adapter files, "
        "template libraries); replicas serving the same files report the same hash (with a key when auth is on)",
    )


class ReplicaView(Wire):
    name: str
    instance: str = Field(description="unique per process (names may repeat after a restart)")
    config_hash: str | None
    generation: int = Field(description="how many configs this replica has served since it started")
    started_at: float
    uptime_seconds: float
    in_flight: int = Field(description="requests being answered at the last heartbeat")
    served: int = Field(description="questions answered since the replica started")
    status: str = Field(description="ok | degraded (bus unreachable or config differing)")
    seen_at: float = Field(description="epoch seconds of the replica's last heartbeat")


class ClusterResponse(Wire):
    """Body of `GET /v1/cluster` (admin key)."""

    enabled: bool = Field(description="false: cluster is off in config.yaml (nothing else is reported)")
    replica: str | None = Field(None, description="the name of the replica that answered")
    backend: str | None = Field(None, description="redis | postgres")
    bus: str | None = Field(None, description="ok | down (then only this replica is listed)")
    replicas: list[ReplicaView] = Field(default_factory=list, description="replicas seen within 3 heartbeats")
    config_hashes: dict[str, int] = Field(default_factory=dict, description="config hash -> replicas serving it")
    consistent: bool | None = Field(None, description="every replica listed serves the same config hash")


class TemplateEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    description: str
    examples: list[str]
    parameters: Json = Field(description="JSON Schema (an object schema) of the template's parameters")
    result_format: str
    tags: list[str]


class AdapterEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    type: str
    description: str
    routes_to: list[str] | None = Field(None, description="a composite's children (it owns no templates itself)")
    templates: list[TemplateEntry] = Field(default_factory=list)


class Catalogue(BaseModel):
    """Body of `GET /v1/templates` and the MCP `list_templates` tool's structured result."""

    model_config = ConfigDict(extra="forbid")

    adapters: list[AdapterEntry]
    template_count: int


class AdapterSummary(Wire):
    name: str
    type: str


class CircuitView(Wire):
    state: Literal["closed", "open", "half_open"]
    consecutive_failures: int
    retry_in_seconds: float | None = None


class SourceHealthView(Wire):
    """One data adapter's live state: its circuit breaker and counters since the adapter was built
    (a reload that rebuilds the adapter starts them again) and its bulkhead."""

    adapter: str
    type: str
    circuit: CircuitView
    calls: int = Field(description="queries asked of the source through its guard")
    attempts: int
    retries: int
    rejected: int = Field(description="answered 503 at once by the open circuit")
    failures: int
    bulkhead: Json


class ConfigStatusView(Wire):
    config_file: str
    last_load: LoadStatusView | None
    last_good_load: LoadStatusView | None
    stats_settings: Json = Field(description="the `stats` block of config.yaml (its url left out)")


class StatisticsResponse(Wire):
    """Body of `GET /v1/routing/statistics`: the adapter's description (the seed design's keys; which of
    them appear depends on the adapter type), live figures from the routing log and the config status."""

    adapter: str
    type: str
    total_templates: int | None = None
    collection_name: str | None = None
    backend: str | None = None
    url: str | None = None
    database: str | None = None
    child_adapter_count: int | None = None
    child_adapters: dict[str, Json] | None = None
    configuration: Json | None = None
    multistage_selection: Json | None = None
    bulkhead: Json | None = Field(None, description="a data adapter's concurrency: max_concurrency, running, rejected")
    routing_log: Json = Field(description="figures over the window (counts, latency, histogram), or {enabled: false}")
    adapters: list[AdapterSummary]
    sources: list[SourceHealthView] = Field(
        default_factory=list, description="live circuit and bulkhead state of the data adapters shown"
    )
    config_status: ConfigStatusView
    generated_at: float


class ForgetQuestionsResponse(Wire):
    """Body of `POST /v1/routing/unmatched/forget`."""

    forgotten: int = Field(description="routing-log entries whose question text was removed")
