"""Values a question means by a word that is not the value: 'a concert' for the category Music, 'a
child-friendly museum' for good_for_kids.

The operator says what an example means beyond its marked words (`{text: "any concerts this weekend?",
values: {category: Music}}`); from those, each parameter with a closed list or a yes/no value learns the
words that go with one of its values: a word seen with that value in at least MIN_SEEN examples, with it
in at least MIN_SHARE of the examples (of the templates that have the parameter) that use the word at all
(singular and plural as one word), and more often than chance would show it (the value's share of all
examples). An example that marks the parameter's value says nothing of its other words ('a
[standard](type) car available': the mark gives the value, not 'available'). The words inside another
value's marks, numbers, function words and the values' own words (which the list reader reads) are never
such words. A question whose words point at one value of a parameter that no reader filled gets it
(extractor `implied`, the word as its text); words pointing at two values give none.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..templates import ParameterSpec, ParameterType, Template
from ..templates.annotations import ExampleSpan
from .candidates import Candidate, item_type
from .coercion import InvalidValue, canonical_allowed, coerce
from .text import Word, overlaps, stem, words, wordset

MIN_SEEN = 2
MIN_SHARE = 0.9
CHANCE = 0.05  # ... and the word's examples would show that value so often by chance at most this rarely
IMPLIED = 0.6  # below every reader's own reading of the question
_FUNCTION_WORDS = wordset(
    "a an the i me my we our you your to of in on at for and or is are be am was can could would will please want "
    "need like find some any something with it this that there do does did get look looking search show tell me "
    "im i'm i'd i'll from by about what which who where when how one ones two three four five six seven eight nine "
    "ten no not none never without nothing"  # a negation points at no value ('no kids with us' is no free entry)
)
Lexicon = dict[str, Any]  # word -> the value it points at


def learns(spec: ParameterSpec) -> bool:
    """Only a closed list of text values or a yes/no value is learned (numbers have their own readers; an
    array takes the values the question names, one by one)."""
    if spec.type is ParameterType.ARRAY:
        return False
    kind = item_type(spec)
    return kind is ParameterType.BOOLEAN or (
        kind in (ParameterType.STRING, ParameterType.ENUM) and bool(spec.allowed_values)
    )


@dataclass
class _Seen:
    with_value: Counter[tuple[str, Any]]
    at_all: Counter[str]
    written: dict[Any, Any]  # each value as first written, by its key
    examples: int = 0
    valued: Counter[Any] = field(default_factory=Counter)  # examples per value


def _by_chance(n: int, k: int, rate: float) -> float:
    """The chance that at least k of n examples show a value that `rate` of all examples show (a binomial
    tail, summed in log space so that thousands of examples do not overflow, and only as far as CHANCE)."""
    if rate >= 1.0:
        return 1.0
    log_rate, log_rest, total = math.log(rate), math.log1p(-rate), 0.0
    for i in range(k, n + 1):
        log_ways = math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
        total += math.exp(log_ways + i * log_rate + (n - i) * log_rest)
        if total > CHANCE:
            break
    return total


def learn(templates: Iterable[Template]) -> dict[str, Lexicon]:
    """Per parameter name, the words that point at one of its values (above), from every template that has
    a parameter of that name (their examples share evidence, as the learned extractor's do)."""
    listed = list(templates)
    stated = {name for t in listed for pairs in t.example_values for name, _ in pairs}
    seen: dict[str, _Seen] = defaultdict(lambda: _Seen(Counter(), Counter(), {}))
    own: dict[str, set[str]] = defaultdict(set)
    for template in listed:
        specs = {p.name: p for p in template.parameters if p.name in stated and learns(p)}
        for spec in specs.values():
            own[spec.name] |= {stem(w.lower) for v in spec.allowed_values or () for w in words(str(v))}
        for index, text in enumerate(template.nl_examples if specs else ()):
            values = _checked(template.values_of(index), specs)
            marks = template.marks_of(index)
            found = _words(text, marks)
            for name in set(specs) - {m.parameter for m in marks}:  # a marked value is explained by its mark
                counts = seen[name]
                counts.examples += 1
                counts.at_all.update(found)
                if name in values:
                    key = _key(values[name])
                    counts.valued[key] += 1
                    counts.written.setdefault(key, values[name])
                    counts.with_value.update((word, key) for word in found)
    out: dict[str, Lexicon] = {}
    for name, counts in seen.items():  # at most one value per word: MIN_SHARE is above a half
        out[name] = {
            word: counts.written[key]
            for (word, key), n in counts.with_value.items()
            if n >= MIN_SEEN
            and n / counts.at_all[word] >= MIN_SHARE
            and word not in own[name]
            and _by_chance(counts.at_all[word], n, counts.valued[key] / counts.examples) <= CHANCE
        }
    return out


def candidates(spec: ParameterSpec, lexicon: Lexicon | None, question: str) -> list[Candidate]:
    """The implied value of the question's words, when they point at one value (none when two)."""
    if not lexicon or not learns(spec):
        return []
    toks = words(question)
    # a hyphenated word is the same said with a space ('child friendly' for 'child-friendly')
    said = [(w, w.lower) for w in toks] + [
        (Word(question[a.start : b.end], a.start, b.end), f"{a.lower}-{b.lower}")
        for a, b in itertools.pairwise(toks)
        if b.start == a.end + 1
    ]
    hits = [(w, lexicon[stem(key)]) for w, key in said if stem(key) in lexicon]
    if len({_key(v) for _, v in hits}) != 1:
        return []
    word, value = hits[0]
    cand = Candidate(spec.name, value, word.span, word.text, "implied", IMPLIED, key=("implied", word.span))
    cand.cued = True  # the examples say what the word means: no learned model's reading drops it
    return [cand]


def _checked(pairs: tuple[tuple[str, Any], ...], specs: dict[str, ParameterSpec]) -> dict[str, Any]:
    """An example's stated values as their parameters take them ('yes' and true are one yes/no value)."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name in specs:
            try:
                out[name] = coerce(specs[name], canonical_allowed(specs[name], value))
            except InvalidValue:
                continue  # refused at load; a template built in code may still hold one
    return out


def _words(text: str, marks: Sequence[ExampleSpan]) -> set[str]:
    """The example's words that may point at a value: outside its marks, no function word, no number."""
    return {
        stem(w.lower)
        for w in words(text)
        if w.lower not in _FUNCTION_WORDS
        and not any(c.isdigit() for c in w.text)
        and not any(overlaps(w.span, (m.start, m.end)) for m in marks)
    }


def _key(value: Any) -> Any:
    """Values compared as written ('Music' and 'music' are one value; True and 'true' too)."""
    return str(value).casefold()
