"""String similarity stage (rapidfuzz): the question against each candidate's template fields.

All candidates are scored in one `rapidfuzz.process.cdist` call over their fields' texts (normalised
once per template and kept), and each field's best is a segment max: with 100 examples per template
this stage cost 8 ms per question when every text was normalised and compared in a Python call of its
own. The scores are the same (the same scorer, per pair). The questions of concurrent requests are scored
in one call (`batches`), on a thread instead of the event loop when they hold many texts (issue 34: at 1,000
templates under 8 clients this stage was a tenth of the loop's samples)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process
from rapidfuzz.distance import JaroWinkler, Levenshtein

from ...templates import Template
from ..candidates import Candidate
from ..settings import StringSimilaritySettings, TemplateField
from .base import LocalStage, StageReport

# scorer and the divisor that maps its scores to 0..1
SCORERS: dict[str, tuple[Callable[..., float], float]] = {
    "jaro_winkler": (JaroWinkler.normalized_similarity, 1.0),
    "levenshtein": (Levenshtein.normalized_similarity, 1.0),
    "ratio": (fuzz.ratio, 100.0),
}


# texts compared per question above which the stage leaves the event loop (cdist over 1,000 texts took
# 0.14 ms here, a hop to a thread costs the loop about 0.02 ms)
OFF_LOOP_ABOVE_TEXTS = 1500


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def field_texts(template: Template, field: str) -> list[str]:
    if field == "description":
        return [template.description]
    if field == "nl_examples":
        return list(template.nl_examples)
    return [" ".join(template.tags)] if template.tags else []


class StringSimilarityStage(LocalStage):
    name = "string_similarity"

    def __init__(self, settings: StringSimilaritySettings) -> None:
        self.settings = settings
        self.weight = settings.weight
        self._scorer, self._divisor = SCORERS[settings.algorithm]
        # id(template) -> (template, normalised texts per compared field); the template is kept so its
        # id cannot be reused. The stage lives as long as its composite (rebuilt on every reload).
        self._texts: dict[int, tuple[Template, list[list[str]]]] = {}

    def template_score(self, question: str, template: Template) -> float:
        """Best match within each field, then aggregated over fields; below min_threshold counts as 0."""
        return self._scores(question, [template])[0]

    def heavy(self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]], fetched: Any) -> bool:
        """Many texts to compare: off the event loop (on the request path the questions of concurrent requests
        come together)."""
        return sum(len(c.template.nl_examples) + 2 for cands in candidates for c in cands) > OFF_LOOP_ABOVE_TEXTS

    def work(
        self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]], fetched: Any
    ) -> list[StageReport]:
        jobs = [(q, [c.template for c in cands]) for q, cands in zip(questions, candidates, strict=True)]
        for cands, scores in zip(candidates, self._scores_many(jobs), strict=True):
            for cand, value in zip(cands, scores, strict=True):
                cand.stage_scores[self.name] = value
        return [StageReport(self.name) for _ in questions]

    def _scores_many(self, jobs: list[tuple[str, list[Template]]]) -> list[list[float]]:
        return [self._scores(question, templates) for question, templates in jobs]

    def _scores(self, question: str, templates: Sequence[Template]) -> list[float]:
        fields = self.settings.compare_fields
        texts: list[str] = []
        starts: list[int] = []  # first text of each (template, field) segment
        segments: list[tuple[int, TemplateField]] = []
        for i, template in enumerate(templates):
            for field, field_list in zip(fields, self._normalised(template), strict=True):
                if field_list:
                    segments.append((i, field))
                    starts.append(len(texts))
                    texts.extend(field_list)
        per_field: list[dict[TemplateField, float]] = [{} for _ in templates]
        if texts:
            sims = process.cdist([normalise(question)], texts, scorer=self._scorer, dtype=np.float64)[0]
            best = (np.maximum.reduceat(sims, starts) / self._divisor).tolist()
            for (i, field), value in zip(segments, best, strict=True):
                per_field[i][field] = value
        return [self._aggregate(scores) for scores in per_field]

    def _normalised(self, template: Template) -> list[list[str]]:
        entry = self._texts.get(id(template))
        if entry is None or entry[0] is not template:
            if len(self._texts) >= 100_000:  # templates seen by no composite now: start again
                self._texts.clear()
            entry = (template, [[normalise(t) for t in field_texts(template, f)] for f in self.settings.compare_fields])
            self._texts[id(template)] = entry
        return entry[1]

    def _aggregate(self, per_field: dict[TemplateField, float]) -> float:
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
