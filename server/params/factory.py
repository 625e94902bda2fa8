"""Build the parameter extractor of one data adapter from its `parameter_extraction` block."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import ParameterExtractor
from .extractor import TemplateParameterExtractor, Today
from .learned.learner import LearnedExtractor
from .learned.store import LearnedModels
from .settings import ParameterExtractionSettings


class ExtractionConfigError(ValueError):
    """The extractor cannot be built as configured (for example the LLM key variable is unset)."""


def extraction_settings(adapter_settings: Any) -> ParameterExtractionSettings:
    found = getattr(adapter_settings, "parameter_extraction", None)
    return found if isinstance(found, ParameterExtractionSettings) else ParameterExtractionSettings()


def build_extractor(
    adapter_settings: Any,
    app_settings: Any,
    *,
    today: Today | None = None,
    environ: Mapping[str, str] | None = None,
    learned_models: LearnedModels | None = None,
    root: Path | None = None,
) -> ParameterExtractor:
    """The adapter's extractor; the LLM pass is built only when `parameter_extraction.llm.enabled`, the
    learned extractor when `parameter_extraction.learned.enabled` (it fits only if examples are annotated)."""
    settings = extraction_settings(adapter_settings)
    learned = None
    if settings.learned.enabled:
        learned = LearnedExtractor(
            getattr(adapter_settings, "name", "?"),
            learned_models or LearnedModels(),
            _cache_dir(settings.learned.cache_dir, root),
        )
    filler = None
    if settings.llm.enabled:
        env = os.environ if environ is None else environ
        api_key = env.get(settings.llm.api_key_env, "").strip()
        if not api_key:
            name = getattr(adapter_settings, "name", "?")
            raise ExtractionConfigError(
                f"adapter '{name}': parameter_extraction.llm is enabled but environment variable "
                f"{settings.llm.api_key_env} is not set or empty (it must hold the Anthropic API key)"
            )
        from .llm import AnthropicFiller

        filler = AnthropicFiller(settings.llm, api_key)
    return TemplateParameterExtractor(settings, today=today, filler=filler, learned=learned)


def _cache_dir(setting: str | None, root: Path | None) -> Path | None:
    if setting is None:
        return None
    path = Path(setting).expanduser()
    return path if path.is_absolute() or root is None else root / path
