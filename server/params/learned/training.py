"""What each template's learned model is fitted on, from an adapter's annotated examples.

Every example of a template the operator annotated (at least one marked value) is a sentence: words,
features (server/params/learned/features.py) and B/I/O labels from its marks; unmarked examples of such
a template teach what is not a value ('find me a flight'). Templates without marks get no model: their
unmarked values would teach that values are not values. Each own sentence is also learned lower-cased
and without the list features, and once more with each marked value swapped for another value marked
for the same parameter elsewhere, and once with each capitalised free-text value replaced by made-up
words of the same shape ('Fremont' -> 'Dakelor', 'SD' -> 'KV'): so the model learns values and their
roles from the words around them, not from the values themselves or the lists (open vocabulary, values
a list does not hold, a city seen only as a destination asked as an origin, a name no example used).

One model per template, with its own labels only: a fit's cost grows with the square of its labels, so
an adapter of many templates fits many small models, not one big one (34 SGD templates with 63
parameters in one adapter: 10 s, where one model took 400 s). A template also learns from the other
templates' marked examples of the parameters it shares with them (same name), up to SHARED_PER_OWN
sentences per own example, their other marks read as no value.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ...templates import Template
from ..candidates import free_text
from ..date_words import MONTHS, WEEKDAYS
from ..numbers import find_numbers
from .features import FEATURES_VERSION, Mark, bio_labels, sentence_features, tokens
from .tagger import C1, C2, MAX_ITERATIONS

# the marks the deterministic readers put on a text for a template (list matches of its parameters,
# numbers, dates, times); the extractor passes its own, so training and tagging see the same marks
Marker = Callable[[str, Template], list[Mark]]
Labelled = list[tuple[int, int, str]]  # (start, end, parameter) marks of a text
Marked = tuple[str, Labelled]

SHARED_PER_OWN = 2


@dataclass
class TrainingSet:
    xs: list[list[list[str]]] = field(default_factory=list)
    ys: list[list[str]] = field(default_factory=list)

    @property
    def sentences(self) -> int:
        return len(self.xs)


@dataclass
class Plan:
    """What one template's model learns from, before any features are computed."""

    template: Template
    own: list[Marked]
    borrowed: list[Marked]

    def fingerprint(self, lists: str) -> str:
        """Everything the fit depends on: the sentences and their marks, the template's parameters, the
        digest of its value lists (`lists`: the list features read them) and the code of params/."""
        digest = hashlib.sha256(f"v={FEATURES_VERSION}|c1={C1}|c2={C2}|it={MAX_ITERATIONS}|{_code()}".encode())
        digest.update(lists.encode())
        digest.update(str([p.model_dump_json() for p in self.template.parameters]).encode())
        for text, marks in (*self.own, ("\x00", []), *self.borrowed):
            digest.update(f"{text}\x1e{sorted(marks)}\x1d".encode())
        return digest.hexdigest()[:32]

    def training_set(self, marker: Marker, pool: dict[str, list[str]]) -> TrainingSet:
        data = TrainingSet()
        free = {p.name for p in self.template.parameters if free_text(p)}
        for text, marks in self.own:
            _add(data, text, marks, marker(text, self.template), lists=True)
            lower = text.lower()
            _add(data, lower, marks, marker(lower, self.template), lists=False)
            if marks:
                swapped, moved = _swapped(text, marks, pool, random.Random(text))
                if swapped != text:
                    _add(data, swapped, moved, marker(swapped, self.template), lists=True)
                invented, shifted = _invented(text, marks, free, random.Random("invented" + text))
                if invented != text:
                    _add(data, invented, shifted, marker(invented, self.template), lists=True)
        for text, marks in self.borrowed:
            _add(data, text, marks, marker(text, self.template), lists=True)
        return data

    def labels(self) -> set[str]:
        return {name for _, marks in self.own for *_, name in marks}


def plans(templates: Iterable[Template]) -> dict[str, Plan]:
    """One plan per annotated template."""
    listed = list(templates)
    out: dict[str, Plan] = {}
    for template in listed:
        if not any(template.example_spans):
            continue
        names = {p.name for p in template.parameters}
        budget = SHARED_PER_OWN * len(template.nl_examples)
        borrowed: list[Marked] = []
        for other in listed:
            if other is template or not names & {s.parameter for m in other.example_spans for s in m}:
                continue
            for text, marks in _examples(other):
                shared = [m for m in marks if m[2] in names]
                if shared and len(borrowed) < budget:
                    borrowed.append((text, shared))
        out[template.id] = Plan(template, _examples(template), borrowed)
    return out


def marked_values(templates: Iterable[Template]) -> dict[str, list[str]]:
    """Every value marked for each parameter name across the adapter's examples (the swap pool)."""
    pool: dict[str, set[str]] = defaultdict(set)
    for template in templates:
        for example in template.annotated_examples():
            for span in example.spans:
                pool[span.parameter].add(example.value_of(span))
    return {name: sorted(values) for name, values in pool.items()}


def _examples(template: Template) -> list[Marked]:
    return [
        (text, [(s.start, s.end, s.parameter) for s in template.marks_of(i)])
        for i, text in enumerate(template.nl_examples)
        if tokens(text)
    ]


def _add(out: TrainingSet, text: str, labelled: Labelled, marks: list[Mark], lists: bool) -> None:
    toks = tokens(text)
    kept = marks if lists else [m for m in marks if not m.tag.startswith("list:")]
    out.xs.append(sentence_features(toks, kept, text))
    out.ys.append(bio_labels(toks, labelled))


def _swapped(text: str, labelled: Labelled, pool: dict[str, list[str]], rng: random.Random) -> Marked:
    """The text with each marked value replaced by another value of the same parameter, and the moved marks."""

    def other(start: int, end: int, name: str) -> str:
        others = [v for v in pool.get(name, []) if v != text[start:end]]
        return rng.choice(others) if others else text[start:end]

    return _replaced(text, labelled, other)


def _invented(text: str, labelled: Labelled, free: set[str], rng: random.Random) -> Marked:
    """The text with the capitalised words of each free-text parameter's marked value replaced by made-up
    words of the same shape ('Fremont, CA' -> 'Dakelor, KV'); lower-case words stay ('Maggie Daley Park ice
    rink' keeps 'ice rink': made-up lower-case words taught the model that any words there are a value, and it
    took 'restaurant reservation' for a city)."""

    def made_up(start: int, end: int, name: str) -> str:
        value = text[start:end]
        if name not in free:
            return value
        return _LETTERS.sub(lambda m: _made_up_word(m.group(), rng) if m.group()[0].isupper() else m.group(), value)

    return _replaced(text, labelled, made_up)


def _replaced(text: str, labelled: Labelled, new_value: Callable[[int, int, str], str]) -> Marked:
    """The text with each mark's value replaced by `new_value(start, end, parameter)`, and the moved marks."""
    pieces, moved, at, shift = [], [], 0, 0
    for start, end, name in sorted(labelled):
        value = new_value(start, end, name)
        pieces.append(text[at:start] + value)
        moved.append((start + shift, start + shift + len(value), name))
        shift += len(value) - (end - start)
        at = end
    return "".join(pieces) + text[at:], moved


_LETTERS = re.compile(r"[^\W\d_]+")  # a run of letters, accented ones too ('São')
_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"


def _made_up_word(word: str, rng: random.Random) -> str:
    """A pronounceable non-word as long as `word`, in its case ('Fremont' -> 'Dakelor', 'SD' -> 'KV'), and
    never one a reader takes for a day or a number ('Mon', 'Ten')."""
    while True:
        if word.isupper() and len(word) <= 3:
            made = "".join(rng.choice(_CONSONANTS.upper()) for _ in word)
        else:
            letters = "".join(rng.choice(_VOWELS if i % 2 else _CONSONANTS) for i in range(len(word)))
            made = letters.upper() if word.isupper() else letters.capitalize()
        if made.lower() not in MONTHS and made.lower() not in WEEKDAYS and not find_numbers(made):
            return made


@cache
def _code() -> str:
    """Digest of the params package's code: the readers decide the features, this folder the fit."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
