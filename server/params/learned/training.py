"""Training sentences for the learned extractor from an adapter's annotated examples.

Every example of a template the operator annotated (at least one marked value) is a sentence: words,
features (server/params/learned/features.py) and B/I/O labels from its marks; unmarked examples of such
a template teach what is not a value ('find me a flight'). Templates with parameters but no marks at all
are left out: their unmarked values would teach the model that values are not values. Each sentence is
also learned lower-cased and without the list features, so the model learns to find values from the
words around them, not only from the lists (open vocabulary, values a list does not hold).
"""

from __future__ import annotations

import hashlib
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


def training_set(templates: Iterable[Template], marker: Marker) -> TrainingSet:
    out = TrainingSet()
    for template in templates:
        if template.parameters and not any(template.example_spans):
            continue
        if not template.nl_examples:
            continue
        out.templates += 1
        spans = list(template.example_spans) or [()] * len(template.nl_examples)
        for text, marks in zip(template.nl_examples, spans, strict=False):
            labelled = [(s.start, s.end, s.parameter) for s in marks]
            toks = tokens(text)
            if not toks:
                continue
            readers = marker(text, template)
            out.xs.append(sentence_features(toks, readers))
            out.ys.append(bio_labels(toks, labelled))
            lower = text.lower()
            plain = [m for m in marker(lower, template) if not m.tag.startswith("list:")]
            out.xs.append(sentence_features(tokens(lower), plain))
            out.ys.append(bio_labels(tokens(lower), labelled))
    return out


def _code() -> str:
    """Digest of the modules whose code decides the features and the fit."""
    from . import features, tagger

    digest = hashlib.sha256()
    for module in (features, tagger):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]
