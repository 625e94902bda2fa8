"""Parameters: extract values for a chosen template from the question, coerce and validate them."""

from .base import ExtractedValue, Extraction, ParameterExtractor, ParamProblem
from .extractor import TemplateParameterExtractor
from .settings import LLMExtractionSettings, ParameterExtractionSettings

__all__ = [
    "ExtractedValue",
    "Extraction",
    "LLMExtractionSettings",
    "ParamProblem",
    "ParameterExtractionSettings",
    "ParameterExtractor",
    "TemplateParameterExtractor",
]
