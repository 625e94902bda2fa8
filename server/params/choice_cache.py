"""What matching a parameter's closed list needs, built once per template rather than once per question:
the ordinary words of the template's examples, each parameter's rules and its prepared phrases.

Ordinary words are the words of a template's `nl_examples` outside any `[text](parameter)` mark (an
example without marks gives all its words): 'book' in 'book a table near [selmer](city)'. A question
word the template itself uses that way is not read as a misspelt or partial value (choices.py).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from ..templates import ParameterSpec, Template
from .choices import ChoiceRules, PhraseIndex, phrases_for
from .text import overlaps, words
from .value_list import ValueList

T = TypeVar("T")


def per_template(read: Callable[[Template], T]) -> Callable[[Template], T]:
    """`read`, remembered per template object (templates are immutable; a reload brings new objects, and an
    entry leaves with its template)."""
    memo: dict[int, T] = {}

    @functools.wraps(read)
    def remembered(template: Template) -> T:
        key = id(template)
        found = memo.get(key)
        if found is None:
            found = read(template)
            memo[key] = found
            weakref.finalize(template, memo.pop, key, None)
        return found

    remembered.memo = memo  # type: ignore[attr-defined]  # what tests look at
    return remembered


@dataclass(frozen=True)
class _ExampleWords:
    """A template's example words, read in one pass (ordinary_words, lower_case_words, annotated_wording)."""

    ordinary: frozenset[str]  # lower-cased, outside the marks
    lower_case: frozenset[str]  # ... of those, written in lower case or opening the example
    around: frozenset[str]  # written in lower case outside the marks of an example that has marks
    inside: frozenset[str]  # inside a mark


@per_template
def _example_words(template: Template) -> _ExampleWords:
    ordinary: set[str] = set()
    lower_case: set[str] = set()
    around: set[str] = set()
    inside: set[str] = set()
    for i, text in enumerate(template.nl_examples):
        marks = template.marks_of(i)
        for w in words(text):
            if any(overlaps(w.span, (m.start, m.end)) for m in marks):
                inside.add(w.lower)
                continue
            ordinary.add(w.lower)
            if w.text[0].islower() or w.start == 0:
                lower_case.add(w.lower)
            if marks and w.text[0].islower():
                around.add(w.lower)
    return _ExampleWords(frozenset(ordinary), frozenset(lower_case), frozenset(around), frozenset(inside))


@per_template
def ordinary_words(template: Template) -> frozenset[str]:
    """Lower-cased words of the examples outside their marks."""
    return _example_words(template).ordinary


@per_template
def lower_case_words(template: Template) -> frozenset[str]:
    """The words of the examples outside their marks that are written in lower case or open a sentence: the
    template's own wording. A word it only ever capitalises inside a sentence is a name even in an example
    without marks ('Priya' in 'show me Priya Raman's reviews')."""
    return _example_words(template).lower_case


def annotated_wording(templates: Iterable[Template]) -> frozenset[str]:
    """The words examples with marks write in lower case outside them, less every word any mark holds: words
    the annotators used around values and never as one ('in particular', 'a trip to take', 'in the mood').
    Read from each template's one pass over its examples, which its own wording is read from too."""
    around: set[str] = set()
    inside: set[str] = set()
    for template in templates:
        read = _example_words(template)
        around |= read.around
        inside |= read.inside
    return frozenset(around - inside)


@dataclass
class _Entry:
    template: Template  # the object the entry was built for (a reload may bring an equal new one)
    spec: ParameterSpec
    stored: ValueList | None
    rules: ChoiceRules
    index: PhraseIndex | None


class ChoiceCache:
    """Rules and phrase index per (template, parameter); rebuilt when the template object or its list changes
    (a reload, a values list refreshed after its TTL)."""

    def __init__(self, floor: float) -> None:
        self.floor = floor
        self._entries: dict[tuple[str, str], _Entry] = {}

    def cached(
        self, template: Template, spec: ParameterSpec, stored: ValueList | None
    ) -> tuple[PhraseIndex | None, ChoiceRules] | None:
        """What `matcher` gives, if it is built already for this very template and list; else None."""
        entry = self._entries.get((template.id, spec.name))
        if entry is None or entry.stored is not stored or entry.spec is not spec:
            return None
        if entry.template is not template and entry.template.nl_examples is not template.nl_examples:
            return None  # a copy of the template with fewer parameters (a clarification's) shares its examples
        return entry.index, entry.rules

    def matcher(
        self, template: Template, spec: ParameterSpec, stored: ValueList | None
    ) -> tuple[PhraseIndex | None, ChoiceRules]:
        """The prepared phrases (None: the parameter has no closed list) and the rules to match them by.
        Building the phrases of a long list takes a while (about 2 s for 50,000 names): callers on the
        event loop run it in a thread."""
        found = self.cached(template, spec, stored)
        if found is not None:
            return found
        entry = _Entry(template, spec, stored, self._rules(template, spec), self._index(spec, stored))
        self._entries[(template.id, spec.name)] = entry
        return entry.index, entry.rules

    def _rules(self, template: Template, spec: ParameterSpec) -> ChoiceRules:
        return ChoiceRules(
            floor=self.floor,
            fuzzy=spec.match == "fuzzy",
            partial=spec.partial,
            ordinary=lower_case_words(template),  # a name an example capitalises is no ordinary word
        )

    @staticmethod
    def _index(spec: ParameterSpec, stored: ValueList | None) -> PhraseIndex | None:
        if not (spec.allowed_values or spec.aliases or stored):
            return None
        return PhraseIndex(phrases_for(spec.allowed_values, spec.aliases, stored))
