"""Choose the parameter extractor for an adapter."""

from __future__ import annotations

from typing import Any

from .base import ParameterExtractor
from .simple import SimpleExtractor


def build_extractor(adapter_settings: Any, app_settings: Any) -> ParameterExtractor:
    return SimpleExtractor()
