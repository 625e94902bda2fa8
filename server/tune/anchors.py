"""Out-of-scope anchors of the tune: texts that no template may answer.

Two sources. The operator's own out-of-scope questions (config `tune.out_of_scope`, a file, or
`--out-of-scope FILE`). And write commands generated from the templates' own texts: the router's
templates read data, and a question like "delete all employees" sits beside "list terminated employees"
because the stock encoder weighs the shared object far above the verb. Each generated anchor is one of a
template's texts with its leading request verb ("list", "show me", "count" ...) replaced by a write verb
("delete terminated employees"); texts that start as a question ("how many ...") are left out, and texts
that start with their object get the verb in front. A write verb that any template's text uses in any of
its forms ("cancel my order", "orders cancelled last week") is never used: that operator's templates
answer it. Numpy and the standard library only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ..templates.write_verbs import READ_VERBS, WRITE_FORMS, WRITE_VERBS, verbs_used, words

PARTICLES = frozenset({"me", "us", "up", "down", "out"})
# A text starting with one of these is a question: a write verb in front of it would not be a request.
QUESTION_WORDS = frozenset(
    [
        "how",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "what's",
        "who's",
        "when",
        "where",
        "why",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "any",
        "should",
        "will",
        "would",
        "has",
        "have",
    ]
)


def allowed_verbs(texts: Iterable[str]) -> list[str]:
    """The write verbs none of `texts` uses in any form (the rule that keeps an operator's own verbs in scope)."""
    used = verbs_used(texts)
    return [verb for verb in WRITE_VERBS if verb not in used]


def object_of(text: str) -> str | None:
    """The text without its leading request verb ("show me the orders" -> "the orders"); the text itself when
    it starts with its object; None for a question, a write request or nothing left."""
    tokens = text.strip().split()
    if not tokens:
        return None
    first = words(tokens[0])
    if not first or first[0] in QUESTION_WORDS or first[0] in WRITE_FORMS:
        return None  # a question, or the operator's own write request
    if first[0] in READ_VERBS:
        tokens = tokens[1:]
        while tokens and tokens[0].lower() in PARTICLES:
            tokens = tokens[1:]
        if tokens and tokens[0].lower() == "of":  # "count of employees ..."
            tokens = tokens[1:]
    rest = " ".join(tokens).rstrip("?.! ")
    return rest or None


def write_verb_anchors(
    texts: Sequence[Sequence[str]], per_template: int, rng: np.random.Generator
) -> tuple[list[list[str]], list[str]]:
    """Up to `per_template` anchors per template (its texts under a write verb no template uses), and the
    verbs used."""
    verbs = allowed_verbs(t for own in texts for t in own)
    out: list[list[str]] = []
    for own in texts:
        objects = list(dict.fromkeys(o for o in map(object_of, own) if o))
        if not verbs or not objects:
            out.append([])
            continue
        chosen = rng.choice(len(objects), size=min(per_template, len(objects)), replace=False)
        out.append([f"{verbs[int(rng.integers(len(verbs)))]} {objects[int(i)]}" for i in sorted(chosen)])
    return out, verbs


def read_out_of_scope(path: Path) -> list[str]:
    """Questions from a file: a YAML list of strings, or one question a line (# comments, blanks skipped)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if isinstance(data, list):
        if not all(isinstance(q, str) for q in data):
            raise ValueError(f"{path}: a YAML list of out-of-scope questions must hold strings only")
        return [q.strip() for q in data if q.strip()]
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


@dataclass(frozen=True)
class Anchors:
    """The tune's anchors: generated ones per template (by the templates' order), and the operator's."""

    per_template: list[list[str]]
    operator: list[str]
    verbs: list[str]

    @property
    def generated(self) -> list[str]:
        return [a for own in self.per_template for a in own]

    @property
    def all(self) -> list[str]:
        return [*self.generated, *self.operator]

    def digest(self) -> str:
        return hashlib.sha256("\n".join(self.all).encode("utf-8")).hexdigest()[:32]

    def describe(self) -> dict[str, object]:
        return {
            "generated": len(self.generated),
            "operator": len(self.operator),
            "write_verbs": self.verbs,
            "hash": self.digest(),
        }


class AnchorBatches:
    """`size` anchors for a batch of templates: the generated anchors of the batch's own templates (each
    must leave the very cluster it was made from) and the operator's, half and half when both exist.
    Always `size` rows (drawn again when too few), so a training step compiles once."""

    def __init__(self, anchors: Anchors, size: int, rng: np.random.Generator) -> None:
        self._anchors, self._size, self._rng = anchors, size, rng

    def __call__(self, batch: Sequence[int]) -> list[str]:
        own = [a for i in batch for a in self._anchors.per_template[i]]
        operator = self._anchors.operator
        if not own and not operator:
            own = self._anchors.generated
        take_operator = (self._size // 2 if own else self._size) if operator else 0
        return [*self._draw(own, self._size - take_operator), *self._draw(operator, take_operator)]

    def _draw(self, pool: Sequence[str], n: int) -> list[str]:
        if n == 0 or not pool:
            return []
        picks = self._rng.choice(len(pool), size=n, replace=n > len(pool))
        return [pool[int(i)] for i in picks]
