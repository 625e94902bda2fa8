"""Match a question against a closed list of phrases: allowed values, aliases, values_from lists.

Exact whole-word matches first (case-insensitive, singular/plural tolerant), then distinctive
words of long stored values ('Orion' -> 'Orion Data Systems'), then rapidfuzz similarity over
word windows for misspellings, never below the configured score floor.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz import fuzz, process

from .text import Span, Word, stem, words, wordset

# Aliases written in capitals that are also everyday words only match in capitals ('US' vs 'us').
_COMMON_WORDS = wordset("us it in on at as no so am me we be do go up or an is of to by my oh ok id")
# Words that identify nothing in a stored name.
_GENERIC = wordset(
    "the a an of and & inc inc. ltd ltd. llc co co. corp corp. corporation company group plc "
    "gmbh ag sa studio studios services solutions systems team department dept"
)


@dataclass(frozen=True)
class Phrase:
    text: str
    value: Any  # the canonical value it stands for
    source: str  # "allowed_values" | "alias" | "values_from"


@dataclass
class ChoiceMatch:
    value: Any
    span: Span
    text: str
    extractor: str  # allowed_values | alias | values_from | fuzzy | partial_name
    score: float  # 0..1


def phrases_for(allowed: list[Any] | None, aliases: dict[str, Any], stored: list[Any] | None = None) -> list[Phrase]:
    out = [Phrase(str(v), v, "allowed_values") for v in allowed or []]
    canon = {str(v).casefold(): v for v in allowed or []}
    out += [Phrase(a, canon.get(str(v).casefold(), v), "alias") for a, v in aliases.items()]
    out += [Phrase(str(v), v, "values_from") for v in stored or [] if str(v).strip()]
    return out


def find_choices(question: str, phrases: list[Phrase], floor: float) -> list[ChoiceMatch]:
    """All matches, best first; a span is reported once, by its best phrase."""
    toks = words(question)
    matches = _exact(question, toks, phrases)
    matches += _partial_names(question, toks, phrases)
    matches += _fuzzy(question, toks, phrases, floor)
    matches.sort(key=lambda m: (-m.score, -(m.span[1] - m.span[0]), m.span[0]))
    kept: list[ChoiceMatch] = []
    for m in matches:
        if not any(
            k.span[0] < m.span[1] and m.span[0] < k.span[1] and k.value != m.value and k.score >= m.score for k in kept
        ) and not any(k.span == m.span for k in kept):
            kept.append(m)
    return kept


def _case_sensitive(phrase: str) -> bool:
    return phrase.isupper() and phrase.lower() in _COMMON_WORDS


@lru_cache(maxsize=8192)
def _phrase_words(text: str) -> tuple[Word, ...]:
    """A phrase's words, once per phrase rather than once per question."""
    return tuple(words(text))


@lru_cache(maxsize=8192)
def _matcher(text: str) -> tuple[re.Pattern[str], bool, tuple[str, ...]]:
    """A phrase's whole-word pattern, whether it only matches in its own case, and its words' stems
    (once per phrase, not once per question: a values_from list can hold thousands)."""
    sensitive = _case_sensitive(text)
    pattern = re.compile(rf"(?<![\w]){re.escape(text)}(?![\w])", 0 if sensitive else re.IGNORECASE)
    return pattern, sensitive, tuple(stem(w.text) for w in _phrase_words(text))


def _exact(question: str, toks: list[Word], phrases: list[Phrase]) -> list[ChoiceMatch]:
    out: list[ChoiceMatch] = []
    stems = [stem(t.text) for t in toks]
    at: dict[int, dict[tuple[str, ...], list[int]]] = {}  # n -> the question's n-word stem runs -> where
    # ASCII on both sides: a phrase the question does not contain (case aside) cannot match, so the
    # regex runs only for the few that it does (non-ASCII case folding has exceptions: always run there)
    lowered = question.lower() if question.isascii() else None
    for p in phrases:
        pattern, sensitive, target = _matcher(p.text)
        hit = False
        if lowered is None or not p.text.isascii() or (p.text in question if sensitive else p.text.lower() in lowered):
            for m in pattern.finditer(question):
                out.append(ChoiceMatch(p.value, m.span(), m.group(), p.source, 0.97 if p.source != "alias" else 0.96))
                hit = True
        if hit or sensitive:
            continue
        n = len(target)  # 'laptop' for 'Laptops'
        if not n:
            continue
        if n not in at:
            runs: dict[tuple[str, ...], list[int]] = {}
            for i in range(len(toks) - n + 1):
                runs.setdefault(tuple(stems[i : i + n]), []).append(i)
            at[n] = runs
        for i in at[n].get(target, ()):
            span = (toks[i].start, toks[i + n - 1].end)
            out.append(ChoiceMatch(p.value, span, question[span[0] : span[1]], p.source, 0.93))
    return out


def _partial_names(question: str, toks: list[Word], phrases: list[Phrase]) -> list[ChoiceMatch]:
    """Distinctive words of multi-word stored values: 'Tesla' finds 'Tesla Inc.' when no other value has it."""
    owners: dict[str, set[Any]] = defaultdict(set)
    for p in phrases:
        if p.source != "values_from":
            continue
        for w in _phrase_words(p.text):
            if w.lower not in _GENERIC and len(w.text) >= 3 and not w.text.isdigit():
                owners[w.lower].add(p.value)
    by_value: dict[Any, list[Word]] = defaultdict(list)
    for t in toks:
        values = owners.get(t.lower)
        if values is not None and len(values) == 1:
            by_value[next(iter(values))].append(t)
    out = []
    for value, hits in by_value.items():
        span = (hits[0].start, hits[-1].end)
        significant = [w for w in _phrase_words(str(value)) if w.lower not in _GENERIC]
        coverage = len(hits) / max(1, len(significant))
        out.append(ChoiceMatch(value, span, question[span[0] : span[1]], "partial_name", 0.78 + 0.1 * min(coverage, 1)))
    return out


def _fuzzy(question: str, toks: list[Word], phrases: list[Phrase], floor: float) -> list[ChoiceMatch]:
    """Misspellings: compare word windows of the phrase's length with rapidfuzz, keep scores >= floor."""
    by_len: dict[int, list[Phrase]] = defaultdict(list)
    for p in phrases:
        if len(p.text) >= 4 and not _case_sensitive(p.text):
            by_len[len(_phrase_words(p.text))].append(p)
    out: list[ChoiceMatch] = []
    for n, group in by_len.items():
        choices = [p.text.lower() for p in group]
        for i in range(len(toks) - n + 1):
            span = (toks[i].start, toks[i + n - 1].end)
            window = question[span[0] : span[1]].lower()
            if len(window) < 4:
                continue
            best = process.extractOne(window, choices, scorer=fuzz.ratio, score_cutoff=floor)
            if best is None:
                continue
            phrase = group[best[2]]
            out.append(ChoiceMatch(phrase.value, span, question[span[0] : span[1]], "fuzzy", 0.6 + 0.3 * best[1] / 100))
    return out


def suggestions(given: str, values: list[Any], limit: int = 3) -> list[Any]:
    """The valid values closest to what was asked, for a clarification."""
    if not given or not values:
        return []
    found = process.extract(
        given.lower(), [str(v).lower() for v in values], scorer=fuzz.WRatio, limit=limit, score_cutoff=60
    )
    return [values[i] for _, _, i in found]
