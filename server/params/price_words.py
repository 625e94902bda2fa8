"""Price levels said in everyday words: 'not very costly' is moderate, 'pricey' expensive, 'on a budget' cheap.

A parameter whose allowed values are a price scale (every value names a level: 'inexpensive', 'moderate',
'expensive', 'very expensive'; '$' to '$$$$'; 'cheap', 'mid-range', 'luxury') reads the ways people say a
level as the value at that level. The list reader finds a value only where its own words are said, and a
template's examples rarely show each paraphrase twice (what params/implied.py needs to learn a word), so the
common ones are written here once. A phrase overrides the list's reading of a word inside it ('not very
expensive' is no 'expensive'); phrases at two levels ('on a budget, but not very costly') give none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..templates import ParameterSpec
from .candidates import Candidate
from .text import Span, overlaps

CHEAP, MODERATE, EXPENSIVE, VERY_EXPENSIVE = 1, 2, 3, 4
DENIED = 0  # a price phrase after a denial ('nothing pricey', "don't want anything fancy"): no level said
READ = 0.95  # below a list value said outright (0.97), which never overlaps a phrase that overrides it

_HIGH = r"(?:expensive|pricey|pricy|costly|high[\s-]?end|upscale|high[\s-]priced)"
_PRICED = r"(?:priced|prices?|pricing|price\s+range|cost)"
_INTENSE = r"(?:very|really|extremely|super|ultra|incredibly|most)"
_SYMBOL = r"(?<!\d)(?<!\d\s){}(?!\s*\d)"  # '$$' is a level, '30 $' and '$ 100' amounts
_FANCY = r"\s+(?:(?:really|very|quite|pretty|more)\s+)?fancy(?!\s+dress)"  # a fancy dress is a costume
# longest first within a level; every pattern is matched as whole words
_PHRASES: tuple[tuple[int, str], ...] = (
    (VERY_EXPENSIVE, rf"{_INTENSE}[\s-]+{_HIGH}"),
    (VERY_EXPENSIVE, r"luxury|luxurious|exorbitant(?:ly\s+priced)?|extravagant|" + _SYMBOL.format(r"\$\$\$\$")),
    (MODERATE, rf"not\s+(?:very|too|that|so|overly|super|really|terribly|all\s+that)\s+(?:{_HIGH}|fancy)"),
    (MODERATE, rf"(?:moderately|reasonably|fairly|decently|sensibly|averagely)[\s-]+{_PRICED}"),
    (
        MODERATE,
        rf"(?:moderate|intermediate|medium|mid|middle|reasonable|fair|affordable|decent|economical)[\s-]+{_PRICED}"
        r"|average[\s-]+(?:priced|pricing|price\s+range)",  # not 'what is the average price'
    ),
    (MODERATE, r"mid[\s-]?range|mid[\s-]?priced|moderate|affordable|economical|" + _SYMBOL.format(r"\$\$")),
    (
        CHEAP,
        rf"not\s+{_HIGH}|below[\s-]+average[\s-]+{_PRICED}|low[\s-]+{_PRICED}|low[\s-]budget"
        r"|least\s+(?:expensive|pricey|pricy|costly)|most\s+(?:affordable|economical|reasonably\s+priced)",
    ),
    (
        CHEAP,
        r"(?:dirt[\s-]+)?cheap(?:er|est)?|inexpensive|on\s+a\s+(?:tight\s+)?budget|bargain|thrifty"
        # 'a budget place', 'budget-friendly'; not 'my budget is $100', "budget doesn't matter"
        r"|budget(?=[\s-]+(?:places?|restaurants?|spots?|options?|hotels?|friendly|meals?|eats|food|dining|"
        r"prices?|priced|airlines?|flights?|cars?|rooms?))|" + _SYMBOL.format(r"\$"),
    ),
    (EXPENSIVE, rf"above[\s-]+average[\s-]+{_PRICED}|high[\s-]+{_PRICED}|{_HIGH}"),
    (
        EXPENSIVE,
        _SYMBOL.format(r"\$\$\$") + r"|upmarket|posh|ritzy|swanky"
        # the adjective, not the verb: 'a fancy place', 'something really fancy'; not 'do you fancy sushi'
        rf"|(?:a|an|the|some|something|somewhere|anywhere|anything){_FANCY}"
        r"|fancy(?=\s+(?:places?|restaurants?|spots?|prices?|priced|dinners?|meals?|food|menu))",
    ),
)
_LEVELS = [(level, re.compile(rf"(?<![\w$]){pattern}(?![\w$])", re.I)) for level, pattern in _PHRASES]
# a denial a few words before a phrase ('nothing pricey', "I don't want anything fancy", 'less expensive')
_DENIAL = re.compile(r"(?:\bnothing|\bno|\bnot|n't|\bnever|\bwithout|\bless)(?:\s+[\w']+){0,2}\s*$", re.I)


@dataclass(frozen=True)
class PriceWords:
    level: int
    span: Span
    text: str


def find_price_words(question: str) -> list[PriceWords]:
    """Every price phrase of the question, the longest where two overlap ('not very costly', not 'costly')."""
    found = [PriceWords(level, m.span(), m.group(0)) for level, pattern in _LEVELS for m in pattern.finditer(question)]
    found = [_denied(question, p) for p in found]
    found.sort(key=lambda p: (p.span[0] - p.span[1], p.span[0]))
    kept: list[PriceWords] = []
    for p in found:
        if not any(overlaps(p.span, k.span) for k in kept):
            kept.append(p)
    return sorted(kept, key=lambda p: p.span[0])


def _denied(question: str, p: PriceWords) -> PriceWords:
    """A phrase after a denial says no level (a phrase that holds its own 'not' reads it: 'not very costly')."""
    if p.text.lower().startswith("not") or not _DENIAL.search(question[max(0, p.span[0] - 30) : p.span[0]]):
        return p
    return PriceWords(DENIED, p.span, p.text)


@lru_cache(maxsize=1024)
def _scale(values: tuple[str, ...]) -> dict[int, str] | None:
    """The level each allowed value names, when every one names a level of its own (else no price scale)."""
    levels: dict[int, str] = {}
    for value in values:
        said = find_price_words(value)
        if len(said) != 1 or said[0].span != (0, len(value)) or said[0].level in levels:
            return None
        levels[said[0].level] = value
    return levels if len(levels) >= 2 else None


def price_scale(spec: ParameterSpec) -> dict[int, Any] | None:
    """Level -> allowed value, for a parameter whose allowed values are a price scale."""
    if not spec.allowed_values:
        return None
    by_text = {str(v): v for v in spec.allowed_values}
    levels = _scale(tuple(by_text))
    return None if levels is None else {level: by_text[text] for level, text in levels.items()}


def price_candidates(spec: ParameterSpec, said: list[PriceWords], scale: dict[int, Any]) -> list[Candidate]:
    """The value at the level the question's price words say (above the scale's top, its top: 'very expensive'
    on [cheap, moderate, expensive]); none when they say two levels or deny one, or a level between two the
    scale lacks."""
    levels = {p.level for p in said}
    if len(levels) != 1 or DENIED in levels:
        return []
    level = _on_scale(levels.pop(), scale)
    if level is None:
        return []
    out = []
    for p in said:
        cand = Candidate(spec.name, scale[level], p.span, p.text, "price_words", READ, key=("price", p.span))
        cand.cued = True  # the words name the value: no learned model's reading drops it
        out.append(cand)
    return out


def _on_scale(level: int, scale: dict[int, Any]) -> int | None:
    if level in scale:
        return level
    if level > max(scale):
        return max(scale)
    if level < min(scale):
        return min(scale)
    return None


def overridden(choices: list[Candidate], prices: list[PriceWords]) -> list[Candidate]:
    """List readings inside a longer price phrase that means another level ('expensive' of 'not very
    expensive')."""
    return [c for c in choices if c.span is None or not any(_longer_around(p, c.span) for p in prices)]


def _longer_around(p: PriceWords, span: Span) -> bool:
    return p.span[0] <= span[0] and span[1] <= p.span[1] and p.span != span
