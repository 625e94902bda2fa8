"""Levels of a scale said in everyday words, read as the allowed value at that level.

A parameter whose allowed values are a scale (every value names a level of its own: a price range
'inexpensive' .. 'very expensive', a car's size 'Compact', 'Standard', 'Full-size') reads the ways people say
a level as the value at that level. The list reader finds a value only where its own words are said, and a
template's examples rarely show each paraphrase twice (what params/implied.py needs to learn a word), so the
common ones are written once per scale (price_words.py, size_words.py). A phrase overrides the list's
reading of a word inside it ('not very expensive' is no 'expensive'); phrases at two levels give none, and
neither does a phrase after a denial ('nothing pricey', "I don't want a large one").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..templates import ParameterSpec
from .candidates import Candidate
from .text import Span, inside, overlaps, words, wordset

DENIED = 0  # a phrase after a denial: no level said
READ = 0.95  # below a list value said outright (0.97), which never overlaps a phrase that overrides it
# a denial a few words before a phrase ('nothing pricey', "I don't want anything fancy", 'less expensive')
_DENIAL = re.compile(r"(?:\bnothing|\bno|\bnot|n't|\bnever|\bwithout|\bless)(?:\s+[\w']+){0,2}\s*$", re.I)


@dataclass(frozen=True)
class Said:
    """A phrase of the question that names a level."""

    level: int
    span: Span
    text: str


class ScaleWords:
    """The phrases of one scale, each at its level (1 the lowest), and what they give a parameter."""

    def __init__(
        self,
        extractor: str,
        phrases: tuple[tuple[int, str], ...],
        before_a_noun: tuple[tuple[int, str], ...] = (),
        value_names: tuple[tuple[int, str], ...] = (),
    ) -> None:
        self.extractor = extractor  # the name the trace gives its readings
        self._levels = [(level, _whole_words(pattern)) for level, pattern in phrases]
        # words that say a level only of the thing they stand before ('a large car', 'a small one'; not 'a
        # small favour', 'a large group')
        self._before_a_noun = [(level, _whole_words(pattern)) for level, pattern in before_a_noun]
        # ... and, of an allowed value, the words that make it a level of the scale ('Compact', 'Standard')
        self._values = [(level, re.compile(rf"(?:{pattern})$", re.I)) for level, pattern in value_names]

    def find(self, question: str, nouns: frozenset[str] = frozenset()) -> list[Said]:
        """Every phrase of the question, the longest where two overlap ('not very costly', not 'costly');
        `nouns`: the words of the things a level may stand before (the template's own words)."""
        found = [Said(level, m.span(), m.group(0)) for level, rx in self._levels for m in rx.finditer(question)]
        found += [
            Said(level, m.span(), m.group(0))
            for level, rx in self._before_a_noun
            for m in rx.finditer(question)
            if m.group(0).islower() and _noun_after(question, m.end(), nouns)
        ]
        found = [_denied(question, p) for p in found]
        found.sort(key=lambda p: (p.span[0] - p.span[1], p.span[0]))
        kept: list[Said] = []
        for p in found:
            if not any(overlaps(p.span, k.span) for k in kept):
                kept.append(p)
        return sorted(kept, key=lambda p: p.span[0])

    def level_of(self, value: str) -> int | None:
        """The level an allowed value names, when its words are one phrase of the scale and nothing more."""
        named = [level for level, rx in self._values if rx.match(value)]
        said = self.find(value) or [
            Said(level, m.span(), m.group(0)) for level, rx in self._before_a_noun for m in rx.finditer(value)
        ]
        if len(said) == 1 and said[0].span == (0, len(value)):
            named.append(said[0].level)
        return named[0] if len(set(named)) == 1 else None

    def scale(self, spec: ParameterSpec) -> dict[int, Any] | None:
        """Level -> allowed value, for a parameter whose allowed values are this scale."""
        if not spec.allowed_values:
            return None
        by_text = {str(v): v for v in spec.allowed_values}
        levels = _levels_of(self, tuple(by_text))
        return None if levels is None else {level: by_text[text] for level, text in levels.items()}

    def candidates(self, spec: ParameterSpec, said: list[Said], scale: dict[int, Any]) -> list[Candidate]:
        """The value at the level the question's phrases say (beyond the scale's end, its end: 'very expensive'
        on [cheap, moderate, expensive]); none when they say two levels or deny one, or a level between two
        the scale lacks."""
        levels = {p.level for p in said}
        if len(levels) != 1 or DENIED in levels:
            return []
        level = _on_scale(levels.pop(), scale)
        if level is None:
            return []
        out = []
        for p in said:
            cand = Candidate(spec.name, scale[level], p.span, p.text, self.extractor, READ, key=("scale", p.span))
            cand.cued = True  # the words name the value: no learned model's reading drops it
            out.append(cand)
        return out


def _whole_words(pattern: str) -> re.Pattern[str]:
    """The pattern matched as whole words; '$' counts as a word character (price symbols)."""
    return re.compile(rf"(?<![\w$])(?:{pattern})(?![\w$])", re.I)


_ONE = wordset("one ones")
_NO_NOUN = wordset("a an the in on at for to of from by with and or but is are was be it this that my your our please")


def _noun_after(question: str, end: int, nouns: frozenset[str]) -> bool:
    """The word right after is one of `nouns` or 'one' ('a large car', 'a large rental car', 'a small one'),
    with nothing but a space between ('my budget is small, in Memphis' says nothing of a car)."""
    after = words(question[end:])[:1]
    if not after or question[end : end + after[0].start].strip():
        return False
    word = after[0].lower
    return word in _ONE or (word in nouns and word not in _NO_NOUN)


@lru_cache(maxsize=1024)
def _levels_of(lexicon: ScaleWords, values: tuple[str, ...]) -> dict[int, str] | None:
    """The level each allowed value names, when every one names a level of its own (else no such scale)."""
    levels: dict[int, str] = {}
    for value in values:
        level = lexicon.level_of(value)
        if level is None or level in levels:
            return None
        levels[level] = value
    return levels if len(levels) >= 2 else None


def _denied(question: str, p: Said) -> Said:
    """A phrase after a denial says no level (a phrase that holds its own 'not' reads it: 'not very costly')."""
    if p.text.lower().startswith("not") or not _DENIAL.search(question[max(0, p.span[0] - 30) : p.span[0]]):
        return p
    return Said(DENIED, p.span, p.text)


def _on_scale(level: int, scale: dict[int, Any]) -> int | None:
    if level in scale:
        return level
    if level > max(scale):
        return max(scale)
    if level < min(scale):
        return min(scale)
    return None


def overridden(choices: list[Candidate], said: list[Said]) -> list[Candidate]:
    """List readings inside a longer phrase that means another level ('expensive' of 'not very expensive')."""
    return [c for c in choices if c.span is None or not any(p.span != c.span and inside(c.span, p.span) for p in said)]
