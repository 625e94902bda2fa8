"""Query templates: the model operators write in YAML, and loading libraries of them."""

from .models import ParameterSpec, ParameterType, Template

__all__ = ["ParameterSpec", "ParameterType", "Template"]
