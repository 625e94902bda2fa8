"""First-cut deterministic extractor: allowed values and aliases, numbers, defaults.

It only fills what it can find unambiguously; anything required and not found becomes a
`missing` problem so the caller asks instead of guessing.
"""

from __future__ import annotations

import re
from typing import Any

from ..templates import ParameterSpec, ParameterType, Template
from .base import ExtractedValue, Extraction, ParameterExtractor, ParamProblem
from .coercion import InvalidValue, canonical_allowed, coerce

_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


class SimpleExtractor(ParameterExtractor):
    async def extract(self, question: str, template: Template) -> Extraction:
        result = Extraction()
        used: list[tuple[int, int]] = []
        for spec in template.parameters:
            found = self._find(spec, question, used)
            if found is None:
                if spec.default is not None:
                    found = ExtractedValue(spec.name, spec.default, "default")
                elif spec.required:
                    result.problems.append(_problem(spec, "missing", f"no value for '{spec.name}' in the question"))
                    continue
                else:
                    continue
            try:
                value = canonical_allowed(spec, coerce(spec, canonical_allowed(spec, found.value)))
            except InvalidValue as exc:
                result.problems.append(_problem(spec, "invalid", f"{spec.name}: {exc}"))
                continue
            found.value = value
            result.values[spec.name] = value
            result.trace.append(found)
            if found.span:
                used.append(found.span)
        return result

    def _find(self, spec: ParameterSpec, question: str, used: list[tuple[int, int]]) -> ExtractedValue | None:
        if spec.allowed_values or spec.aliases:
            return _find_allowed(spec, question)
        if spec.type in (ParameterType.INTEGER, ParameterType.NUMBER):
            for match in _NUMBER.finditer(question):
                span = match.span()
                if any(s <= span[0] < e for s, e in used):
                    continue
                return ExtractedValue(spec.name, match.group().replace(",", ""), "number", span)
        if spec.type is ParameterType.DATE:
            match = _DATE.search(question)
            if match:
                return ExtractedValue(spec.name, match.group(), "iso_date", match.span())
        return None


def _find_allowed(spec: ParameterSpec, question: str) -> ExtractedValue | None:
    """Longest case-insensitive whole-word match among allowed values and aliases."""
    options: list[tuple[str, Any]] = [(str(v), v) for v in spec.allowed_values or []]
    options += [(alias, value) for alias, value in spec.aliases.items()]
    best: ExtractedValue | None = None
    for phrase, value in sorted(options, key=lambda o: -len(o[0])):
        match = re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", question, re.IGNORECASE)
        if match and (best is None or match.start() < best.span[0]):  # type: ignore[index]
            best = ExtractedValue(spec.name, value, "allowed_values" if phrase == str(value) else "alias",
                                  match.span())
            break
    return best


def _problem(spec: ParameterSpec, kind: str, message: str) -> ParamProblem:
    return ParamProblem(spec.name, kind, message, allowed_values=spec.allowed_values, min=spec.min, max=spec.max)
