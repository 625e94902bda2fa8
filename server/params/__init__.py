"""Parameters: extract values for a chosen template from the question, coerce and validate them."""

from .base import ExtractedValue, Extraction, ParameterExtractor, ParamProblem

__all__ = ["ExtractedValue", "Extraction", "ParamProblem", "ParameterExtractor"]
