"""The `composite_retrieval` block: rerank, string similarity, scoring and performance settings.

Defaults are the seed design's. Every key is read by a stage; misspelt values fail at load with the
allowed values listed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic.fields import FieldInfo

from ..rerankers.settings import PerformanceSettings


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RerankingSettings(_Strict):
    enabled: bool = Field(False, description="rerank the best candidates with the reranker named by `provider`")
    provider: str | None = Field(None, description="a name from the `rerankers:` section")
    top_candidates: int = Field(
        10, ge=1, le=100, description="how many of the best candidates the reranker judges (the others count 0 for it)"
    )
    weight: float = Field(0.4, ge=0.0, description="the reranker's weight in the combined score")

    @model_validator(mode="after")
    def _provider_when_enabled(self) -> RerankingSettings:
        if self.enabled and not self.provider:
            raise ValueError("reranking.enabled needs reranking.provider (a name from the rerankers section)")
        return self


TemplateField = Literal["description", "nl_examples", "tags"]


def _default_compare_fields() -> list[TemplateField]:
    return ["description", "nl_examples"]


def _default_field_weights() -> dict[TemplateField, float]:
    return {"description": 1.0, "nl_examples": 2.0, "tags": 0.5}


class StringSimilaritySettings(_Strict):
    enabled: bool = Field(True, description="compare the question with each candidate's texts")
    algorithm: Literal["jaro_winkler", "levenshtein", "ratio"] = Field(
        "jaro_winkler", description="the rapidfuzz similarity used"
    )
    weight: float = Field(0.2, ge=0.0, description="string similarity's weight in the combined score")
    compare_fields: list[TemplateField] = Field(
        default_factory=_default_compare_fields, min_length=1, description="which template texts are compared"
    )
    min_threshold: float = Field(0.3, ge=0.0, le=1.0, description="similarities below this count as 0")
    aggregation: Literal["max", "avg", "weighted_avg"] = Field(
        "max",
        description="how the similarities to a template's texts become one score (`weighted_avg` uses field_weights)",
    )
    field_weights: dict[TemplateField, float] = Field(
        default_factory=_default_field_weights, description="weights of the fields for `aggregation: weighted_avg`"
    )


class IntentModelSettings(_Strict):
    """A light model fitted at start on all children's nl_examples (see intent/intent_model.py)."""

    enabled: bool = Field(
        False, description="fit a light model on the children's nl_examples at start and use its score"
    )
    weight: float = Field(1.0, ge=0.0, description="the intent model's weight in the combined score")
    # a full fit's steps cost templates x a bounded batch of examples (~12 CPU-s for 1,000 templates of 20
    # examples); an edit of a few templates refits only those (intent/intent_model.py)
    max_templates: int = Field(
        10_000,
        ge=2,
        description="above this many templates the model is not fitted (a full fit costs ~12 CPU-s per 1,000 "
        "templates of 20 examples; an edit refits only the changed templates)",
    )
    # token views of the local encoder (intent/token_views.py), used at up to 32 examples per template
    token_views: bool = Field(
        True,
        description="also pool the local encoder's token states (used at up to 32 examples per template on average)",
    )
    # fitted models (and acceptance tests) kept here across restarts, keyed by a fingerprint of the
    # templates, the embedding model and these settings (relative to the config directory; null: off)
    cache_dir: str | None = Field(
        "data/fitted_models",
        description="fitted models (and acceptance tests) kept here across restarts, keyed by a fingerprint of what "
        "the fit depends on (relative to the config directory; null: in memory only)",
    )


class AcceptanceSettings(_Strict):
    """The in-scope test (intent/acceptance.py): P(the chosen template answers the question), fitted at
    start from the templates alone. When on, it decides whether to execute instead of confidence_threshold."""

    enabled: bool = Field(
        False,
        description="decide whether to execute by P(the chosen template answers the question) instead of "
        "confidence_threshold; needs intent_model",
    )
    # None: the self-calibrated threshold (0.5: the best expected accuracy at the share below); a number: fixed
    threshold: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="unset: the self-calibrated threshold (0.5); a number fixes it (raise it to refuse more)",
    )
    # the share of questions you expect no template to cover; weighs the self-calibration
    expected_out_of_scope_share: float = Field(
        0.15,
        gt=0.0,
        lt=1.0,
        description="the share of questions you expect no template to cover; weighs the self-calibration",
    )
    folds: int = Field(5, ge=2, le=20, description="leave-templates-out folds of the self-calibration")


class ScoringSettings(_Strict):
    embedding_weight: float = Field(0.4, ge=0.0, description="the embedding score's weight in the combined score")
    normalize_scores: bool = Field(True, description="renormalise the weights over the stages that produced scores")
    tie_breaker: Literal["embedding", "rerank", "string_similarity"] = Field(
        "embedding",
        description="which stage's score orders equal combined scores (remaining ties go to the child listed first)",
    )


class CompositeRetrievalSettings(_Strict):
    """Defaults of the scoring stages for every composite; a composite may override any part of it
    (deep-merged, then validated)."""

    reranking: RerankingSettings = Field(
        default_factory=RerankingSettings, description="the reranking stage: a reranker judges the best candidates"
    )
    string_similarity: StringSimilaritySettings = Field(
        default_factory=StringSimilaritySettings,
        description="the string similarity stage (rapidfuzz) between the question and each candidate's texts",
    )
    intent_model: IntentModelSettings = Field(
        default_factory=IntentModelSettings, description="the intent model fitted at start on all children's examples"
    )
    acceptance: AcceptanceSettings = Field(
        default_factory=AcceptanceSettings,
        description="the in-scope test that decides whether the chosen template answers the question at all",
    )
    scoring: ScoringSettings = Field(default_factory=ScoringSettings, description="how the stages' scores are combined")
    performance: PerformanceSettings = Field(
        default_factory=PerformanceSettings, description="rerank concurrency and the rerank score cache"
    )

    @model_validator(mode="after")
    def _acceptance_needs_intent_model(self) -> CompositeRetrievalSettings:
        if self.acceptance.enabled and not self.intent_model.enabled:
            raise ValueError("acceptance.enabled needs intent_model.enabled (it is fitted alongside the intent model)")
        return self

    @classmethod
    def embedding_only(cls) -> CompositeRetrievalSettings:
        return cls(string_similarity=StringSimilaritySettings(enabled=False))

    def merged(self, overrides: RetrievalOverrides | None) -> CompositeRetrievalSettings:
        """A composite's overrides over this (global) block: only the keys it set, then the whole
        block validated (cross-key rules such as reranking.enabled needing a provider)."""
        given = overrides.model_dump(exclude_unset=True, exclude_none=True) if overrides is not None else {}
        if not given:
            return self
        return type(self).model_validate(_deep_merge(self.model_dump(), given))


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _optional(info: FieldInfo) -> Any:
    """The field's type (with its constraints) or None."""
    annotation: Any = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    return annotation | None


def _override_of(block: type[BaseModel]) -> Any:
    """The same block with every key optional: what a composite may override (constraints kept)."""
    fields: dict[str, Any] = {
        name: (_optional(info), Field(None, description=info.description)) for name, info in block.model_fields.items()
    }
    return create_model(f"{block.__name__}Override", __config__=ConfigDict(extra="forbid", frozen=True), **fields)


RerankingOverride = _override_of(RerankingSettings)
StringSimilarityOverride = _override_of(StringSimilaritySettings)
IntentModelOverride = _override_of(IntentModelSettings)
AcceptanceOverride = _override_of(AcceptanceSettings)
ScoringOverride = _override_of(ScoringSettings)
PerformanceOverride = _override_of(PerformanceSettings)


class RetrievalOverrides(_Strict):
    """The composite_retrieval keys one composite sets for itself (merged over the global block)."""

    reranking: RerankingOverride | None = None  # type: ignore[valid-type]
    string_similarity: StringSimilarityOverride | None = None  # type: ignore[valid-type]
    intent_model: IntentModelOverride | None = None  # type: ignore[valid-type]
    acceptance: AcceptanceOverride | None = None  # type: ignore[valid-type]
    scoring: ScoringOverride | None = None  # type: ignore[valid-type]
    performance: PerformanceOverride | None = None  # type: ignore[valid-type]
