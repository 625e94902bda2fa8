"""Annotated examples: `[text](parameter)` marks a parameter's value inside an `nl_examples` entry.

The convention is Rasa's training-data markup: `flights from [boston](from_city) to [denver](to_city)`.
The markup is stripped at load, so the example reads as plain text wherever it is embedded, scored or
shown; the marked spans (offsets into the plain text) train the learned parameter extractor
(server/params/learned/). An entry without markup is plain text, brackets and all, as before.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

_MARK = re.compile(r"\[([^\[\]]*)\]\(([^()]*)\)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# markup, well formed or not: '](' or '] (', or '[' followed later by '(name)' ('[boston(from_city)')
_ATTEMPT = re.compile(r"\]\s*\(|\[[^\]]*\(\s*[A-Za-z_]\w*\s*\)")


class ExampleSpan(BaseModel):
    """One marked value: where it is in the plain example and which parameter it fills."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: int
    end: int
    parameter: str


@dataclass(frozen=True)
class AnnotatedExample:
    text: str  # the example with the markup stripped
    spans: tuple[ExampleSpan, ...]

    def value_of(self, span: ExampleSpan) -> str:
        return self.text[span.start : span.end]


class AnnotationError(ValueError):
    """Markup that cannot be read; the message says what is wrong and quotes the spot."""


def is_annotated(raw: str) -> bool:
    """Whether an entry uses the markup at all (plain entries keep literal brackets)."""
    return _ATTEMPT.search(raw) is not None


@functools.lru_cache(maxsize=4096)
def parse_example(raw: str) -> AnnotatedExample:
    """The plain text and the marked spans of one `nl_examples` entry; raises AnnotationError. Remembered
    (the result is immutable): validating a template reads each entry twice, for its text and its spans."""
    if not is_annotated(raw):
        return AnnotatedExample(raw, ())
    pieces: list[str] = []
    spans: list[ExampleSpan] = []
    length = 0
    cursor = 0
    for match in _MARK.finditer(raw):
        before = raw[cursor : match.start()]
        _check_plain(raw, cursor, match.start())
        pieces.append(before)
        length += len(before)
        value, name = match.group(1), match.group(2).strip()
        if not _NAME.match(name):
            raise AnnotationError(f"'{match.group()}': '{name}' is not a parameter name")
        stripped = value.strip()
        if not stripped:
            raise AnnotationError(f"'{match.group()}': the marked value is empty")
        lead = len(value) - len(value.lstrip())
        spans.append(ExampleSpan(start=length + lead, end=length + lead + len(stripped), parameter=name))
        pieces.append(value)
        length += len(value)
        cursor = match.end()
    rest = raw[cursor:]
    _check_plain(raw, cursor, len(raw))
    pieces.append(rest)
    return AnnotatedExample("".join(pieces), tuple(spans))


def _check_plain(raw: str, start: int, end: int) -> None:
    """Between marks, a bracket is markup gone wrong: '[boston(from_city)', '[boston]](x)'."""
    for at in range(start, end):
        if raw[at] in "[]":
            near = raw[max(0, at - 15) : at + 20]
            raise AnnotationError(f"unbalanced '{raw[at]}' near '{near}': mark a value as [text](parameter)")


def plain_text(raw: str) -> str:
    """The entry as it is embedded and shown (pydantic's per-entry validator, so errors name the entry)."""
    return parse_example(raw).text


def spans_of(raw_examples: list[object]) -> tuple[tuple[ExampleSpan, ...], ...]:
    """The marked spans of each entry, aligned with `nl_examples` (entries that fail parse to none: their
    own validator reports them)."""
    out: list[tuple[ExampleSpan, ...]] = []
    for raw in raw_examples:
        try:
            out.append(parse_example(raw.strip()).spans if isinstance(raw, str) else ())
        except AnnotationError:
            out.append(())
    return tuple(out)
