"""Words with their positions, so every extracted value can point back at the span it came from."""

from __future__ import annotations

import re
from dataclasses import dataclass

Span = tuple[int, int]

_WORD = re.compile(r"[A-Za-z0-9\u00C0-\u024F](?:[A-Za-z0-9\u00C0-\u024F'’\-]*[A-Za-z0-9\u00C0-\u024F])?")


@dataclass(frozen=True)
class Word:
    text: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def span(self) -> Span:
        return (self.start, self.end)


def words(text: str) -> list[Word]:
    return [Word(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def inside(a: Span, b: Span) -> bool:
    """`a` lies within `b` (the same span included)."""
    return b[0] <= a[0] and a[1] <= b[1]


def stem(word: str) -> str:
    """A crude singular form: enough for 'laptops' ~ 'laptop' and 'returns' ~ 'return'."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ses", "xes", "ches", "shes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def name_words(name: str) -> list[str]:
    """'min_salary' -> ['min', 'salary'], in order: the last word of a name often says what it is."""
    return [t for t in re.split(r"[_\W]+", name.lower()) if t]


def name_tokens(name: str) -> set[str]:
    """'min_salary' -> {'min', 'salary'}; parameter names hint at the words that introduce a value."""
    return set(name_words(name))


def before(text: str, start: int, width: int = 40) -> str:
    """The lower-cased text just before `start`, for cue words like 'over' or 'top'."""
    return text[max(0, start - width) : start].lower()


def after(text: str, end: int, width: int = 40) -> str:
    return text[end : end + width].lower()


def wordset(text: str) -> frozenset[str]:
    """A set of words written as one readable string."""
    return frozenset(text.split())


# words that end a request, never part of a value it holds ('3 rooms in London Please', 'Van Ness Avenue ASAP')
COURTESY = wordset("please pls plz thanks thank asap")
# words that stand for someone or something said before, and never name it: no value of their own
PRONOUNS = wordset("he him his himself she her hers herself it its itself they them their theirs themselves me us you")


def starts_sentence(question: str, at: int) -> bool:
    """The word at `at` opens the question or a sentence of it (its capital says nothing of a name)."""
    before = question[:at].rstrip()
    return not before or before[-1] in ".!?:;\"'"
