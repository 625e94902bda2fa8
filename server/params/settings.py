"""The `parameter_extraction:` block of a data adapter entry (all keys optional, unknown keys are errors)."""

from __future__ import annotations

import datetime as dt
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..config.types import EnvVarName, HttpUrl


class LLMExtractionSettings(BaseModel):
    """Claude fills required values the deterministic pass could not find. Off unless `enabled: true`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        False,
        description="ask Claude (tool use, a JSON schema of the parameters) for required values the readers did not "
        "find",
    )
    model: str = Field("claude-haiku-4-5", min_length=1, description="the Anthropic model")
    api_key_env: EnvVarName = Field(
        "ANTHROPIC_API_KEY", description="NAME of the environment variable holding the API key"
    )
    base_url: HttpUrl | None = Field(None, description="a proxy or a local stand-in of the API")
    timeout: float = Field(10.0, gt=0, description="seconds per attempt")  # seconds per attempt
    max_retries: int = Field(0, ge=0, le=5, description="retries of a failed call")
    max_tokens: int = Field(512, ge=64, le=4096, description="room for the reply")

    @property
    def total_timeout(self) -> float:
        return self.timeout * (self.max_retries + 1)


class LearnedExtractionSettings(BaseModel):
    """The extractor learned from annotated examples (`[text](parameter)` in nl_examples; params/learned/)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="fit it when the adapter's examples mark values (false: readers only)")
    cache_dir: str | None = Field(
        "data/fitted_models", description="where fits are kept across restarts (relative to the config's parent)"
    )


class ParameterExtractionSettings(BaseModel):
    """How an adapter fills template parameters from a question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fuzzy_score_floor: float = Field(
        85.0, ge=50.0, le=100.0, description="rapidfuzz ratio (0-100) a misspelt value must reach"
    )
    today: dt.date | None = Field(None, description="pin the date relative phrases count from (demo data)")
    date_direction: Literal["past", "future"] = Field(
        "past",
        description="a date said without its year ('june 15th', 'the 5th') is the most recent one (past: "
        "reports) or the next one (future: bookings, flights)",
    )
    timezone: str | None = Field(None, description="IANA zone for 'today'; the server's local zone if unset")
    values_ttl_seconds: float | None = Field(
        None, gt=0, description="values_from cache lifetime; until reload if unset"
    )
    llm: LLMExtractionSettings = Field(
        default_factory=LLMExtractionSettings, description="optional LLM pass that fills required values still missing"
    )
    learned: LearnedExtractionSettings = Field(
        default_factory=LearnedExtractionSettings, description="the extractor learned from annotated examples"
    )

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone '{value}'") from None
        return value

    @model_validator(mode="after")
    def _pinned_or_zoned(self) -> ParameterExtractionSettings:
        if self.today is not None and self.timezone is not None:
            raise ValueError("set either today (a fixed date) or timezone, not both")
        return self
