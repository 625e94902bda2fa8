"""The `composite_retrieval` block: rerank, string similarity, scoring and performance settings.

Defaults are the seed design's. Every key is read by a stage; misspelt values fail at load with the
allowed values listed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic.fields import FieldInfo


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RerankingSettings(_Strict):
    enabled: bool = False
    provider: str | None = None  # a name from the `rerankers:` section
    top_candidates: int = Field(10, ge=1, le=100)
    weight: float = Field(0.4, ge=0.0)

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
    enabled: bool = True
    algorithm: Literal["jaro_winkler", "levenshtein", "ratio"] = "jaro_winkler"
    weight: float = Field(0.2, ge=0.0)
    compare_fields: list[TemplateField] = Field(default_factory=_default_compare_fields, min_length=1)
    min_threshold: float = Field(0.3, ge=0.0, le=1.0)
    aggregation: Literal["max", "avg", "weighted_avg"] = "max"
    field_weights: dict[TemplateField, float] = Field(default_factory=_default_field_weights)


class IntentModelSettings(_Strict):
    """A light model fitted at start on all children's nl_examples (see routing/intent_model.py)."""

    enabled: bool = False
    weight: float = Field(1.0, ge=0.0)
    # above this the model is not fitted (a full fit's steps cost templates x a bounded batch of examples:
    # ~12 CPU-s for 1,000 templates of 20 examples; an edit refits only the changed templates)
    max_templates: int = Field(10_000, ge=2)
    # token views of the local encoder (routing/token_views.py), used at up to 32 examples per template
    token_views: bool = True
    # fitted models (and acceptance tests) kept here across restarts, keyed by a fingerprint of the
    # templates, the embedding model and these settings (relative to the config directory; null: off)
    cache_dir: str | None = "data/fitted_models"


class AcceptanceSettings(_Strict):
    """The in-scope test (routing/acceptance.py): P(the chosen template answers the question), fitted at
    start from the templates alone. When on, it decides whether to execute instead of confidence_threshold."""

    enabled: bool = False
    # None: the self-calibrated threshold (0.5: the best expected accuracy at the share below); a number: fixed
    threshold: float | None = Field(None, ge=0.0, le=1.0)
    # the share of questions you expect no template to cover; weighs the self-calibration
    expected_out_of_scope_share: float = Field(0.15, gt=0.0, lt=1.0)  # = acceptance.DEFAULT_OUT_OF_SCOPE_SHARE
    folds: int = Field(5, ge=2, le=20)  # leave-templates-out folds of the self-calibration


class ScoringSettings(_Strict):
    embedding_weight: float = Field(0.4, ge=0.0)
    normalize_scores: bool = True
    tie_breaker: Literal["embedding", "rerank", "string_similarity"] = "embedding"


class PerformanceSettings(_Strict):
    parallel_rerank: bool = True
    cache_rerank_results: bool = True
    cache_ttl_seconds: float = Field(300, gt=0)  # 0 would be a cache that never hits: use cache_rerank_results: false
    cache_max_entries: int = Field(10_000, ge=1)


class CompositeRetrievalSettings(_Strict):
    reranking: RerankingSettings = Field(default_factory=RerankingSettings)
    string_similarity: StringSimilaritySettings = Field(default_factory=StringSimilaritySettings)
    intent_model: IntentModelSettings = Field(default_factory=IntentModelSettings)
    acceptance: AcceptanceSettings = Field(default_factory=AcceptanceSettings)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    performance: PerformanceSettings = Field(default_factory=PerformanceSettings)

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
    fields: dict[str, Any] = {name: (_optional(info), None) for name, info in block.model_fields.items()}
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
