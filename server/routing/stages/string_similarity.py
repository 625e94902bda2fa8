"""String similarity stage (rapidfuzz): the question against each candidate's template fields."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein

from ...templates import Template
from ..candidates import Candidate
from ..settings import StringSimilaritySettings, TemplateField
from .base import ScoringStage, StageReport

ALGORITHMS: dict[str, Callable[[str, str], float]] = {
    "jaro_winkler": lambda a, b: JaroWinkler.normalized_similarity(a, b),
    "levenshtein": lambda a, b: Levenshtein.normalized_similarity(a, b),
    "ratio": lambda a, b: fuzz.ratio(a, b) / 100.0,
}


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def field_texts(template: Template, field: str) -> list[str]:
    if field == "description":
        return [template.description]
    if field == "nl_examples":
        return list(template.nl_examples)
    return [" ".join(template.tags)] if template.tags else []


class StringSimilarityStage(ScoringStage):
    name = "string_similarity"

    def __init__(self, settings: StringSimilaritySettings) -> None:
        self.settings = settings
        self.weight = settings.weight
        self._similarity = ALGORITHMS[settings.algorithm]

    def template_score(self, question: str, template: Template) -> float:
        """Best match within each field, then aggregated over fields; below min_threshold counts as 0."""
        q = normalise(question)
        per_field: dict[TemplateField, float] = {}
        for field in self.settings.compare_fields:
            texts = field_texts(template, field)
            if texts:
                per_field[field] = max(self._similarity(q, normalise(t)) for t in texts)
        if not per_field:
            return 0.0
        match self.settings.aggregation:
            case "max":
                score = max(per_field.values())
            case "avg":
                score = sum(per_field.values()) / len(per_field)
            case _:
                weights = {f: self.settings.field_weights.get(f, 1.0) for f in per_field}
                total = sum(weights.values()) or 1.0
                score = sum(per_field[f] * weights[f] for f in per_field) / total
        return score if score >= self.settings.min_threshold else 0.0

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        for cand in candidates:
            cand.stage_scores[self.name] = self.template_score(question, cand.template)
        return StageReport(self.name)
