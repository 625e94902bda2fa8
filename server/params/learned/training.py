"""Training sentences for the learned extractor from an adapter's annotated examples.

Every example of a template the operator annotated (at least one marked value) is a sentence: words,
features (server/params/learned/features.py) and B/I/O labels from its marks; unmarked examples of such
a template teach what is not a value ('find me a flight'). Templates with parameters but no marks at all
are left out: their unmarked values would teach the model that values are not values. Each sentence is
also learned lower-cased and without the list features, and once more with each marked value swapped
for another value marked for the same parameter elsewhere: so the model learns to find values and their
roles from the words around them, not from the values themselves or the lists (open vocabulary, values a
list does not hold, a city seen only as a destination asked as an origin).
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ...templates import Template
from .features import FEATURES_VERSION, Mark, bio_labels, sentence_features, tokens
from .tagger import C1, C2, MAX_ITERATIONS

# the marks the deterministic readers put on a text for a template (list matches of its parameters,
# numbers, dates, times); the extractor passes its own, so training and tagging see the same marks
Marker = Callable[[str, Template], list[Mark]]


@dataclass
class TrainingSet:
    xs: list[list[list[str]]] = field(default_factory=list)
    ys: list[list[str]] = field(default_factory=list)
    templates: int = 0

    @property
    def sentences(self) -> int:
        return len(self.xs)

    def labels(self) -> set[str]:
        return {label for y in self.ys for label in y}

    def fingerprint(self) -> str:
        """Everything the fit depends on: the sentences as the model sees them, and the fitting code."""
        digest = hashlib.sha256(f"v={FEATURES_VERSION}|c1={C1}|c2={C2}|it={MAX_ITERATIONS}|{_code()}".encode())
        for x, y in zip(self.xs, self.ys, strict=True):
            for feats, label in zip(x, y, strict=True):
                digest.update(("\x1f".join(feats) + "\x1e" + label + "\x1d").encode())
            digest.update(b"\x00")
        return digest.hexdigest()[:32]


Marked = tuple[str, list[tuple[int, int, str]]]  # a text and its (start, end, parameter) marks


def training_set(templates: Iterable[Template], marker: Marker) -> TrainingSet:
    out = TrainingSet()
    listed = list(templates)
    pool = _marked_values(listed)
    for template in listed:
        if template.parameters and not any(template.example_spans):
            continue
        if not template.nl_examples:
            continue
        out.templates += 1
        spans = list(template.example_spans) or [()] * len(template.nl_examples)
        for text, marks in zip(template.nl_examples, spans, strict=False):
            labelled = [(s.start, s.end, s.parameter) for s in marks]
            if not tokens(text):
                continue
            _add(out, text, labelled, marker(text, template), lists=True)
            lower = text.lower()
            _add(out, lower, labelled, marker(lower, template), lists=False)
            if labelled:
                swapped, moved = _swapped(text, labelled, pool, random.Random(text))
                if swapped != text:
                    _add(out, swapped, moved, marker(swapped, template), lists=True)
    return out


def _add(out: TrainingSet, text: str, labelled: list[tuple[int, int, str]], marks: list[Mark], lists: bool) -> None:
    toks = tokens(text)
    kept = marks if lists else [m for m in marks if not m.tag.startswith("list:")]
    out.xs.append(sentence_features(toks, kept))
    out.ys.append(bio_labels(toks, labelled))


def _marked_values(templates: list[Template]) -> dict[str, list[str]]:
    """Every value marked for each parameter name across the adapter's examples (the swap pool)."""
    pool: dict[str, set[str]] = defaultdict(set)
    for template in templates:
        for example in template.annotated_examples():
            for span in example.spans:
                pool[span.parameter].add(example.value_of(span))
    return {name: sorted(values) for name, values in pool.items()}


def _swapped(text: str, labelled: list[tuple[int, int, str]], pool: dict[str, list[str]], rng: random.Random) -> Marked:
    """The text with each marked value replaced by another value of the same parameter, and the moved marks."""
    pieces, moved, at, shift = [], [], 0, 0
    for start, end, name in sorted(labelled):
        others = [v for v in pool.get(name, []) if v != text[start:end]]
        value = rng.choice(others) if others else text[start:end]
        pieces.append(text[at:start] + value)
        moved.append((start + shift, start + shift + len(value), name))
        shift += len(value) - (end - start)
        at = end
    return "".join(pieces) + text[at:], moved


def _code() -> str:
    """Digest of the modules whose code decides the features and the fit."""
    from . import features, tagger

    digest = hashlib.sha256()
    for module in (features, tagger):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]
