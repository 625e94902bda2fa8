"""Spelled numbers, read once for every reader: 'twenty third' is 23rd, 'a dozen' 12, 'a couple of' 2.

English number words are read by text2num (a Rust reader, MIT; measured at about 0.03 ms a question with
our tokenizer on SGD's dev first turns, so it costs nothing next to an encoder call). It reads cardinals,
ordinals and decimals ('one point five') and keeps 'seven thirty' as two numbers; on its own it does not
read 'a dozen' or 'a couple', which are added here. Each number keeps its span in the question.

`digitised()` gives the question lower-cased with every spelled number written in digits, so the date and
time readers need one grammar of digits ('june fifteenth' is read as 'june 15th', 'half past five' as
'half past 5'); `Digitised.original()` maps a span of that text back to the question's own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from text_to_num import find_numbers as _text2num_find

from .text import Span, Word, after, before, words

_SCALES = frozenset({"hundred", "thousand", "million", "billion"})
_NOT_NUMBERS = frozenset({"o", "oh"})  # text2num reads a lone 'o' as zero; in a typed question it never is
_PAIRS = frozenset({"couple", "pair"})


@dataclass(frozen=True)
class Spelled:
    """A number written in words, where it is in the question, and whether it is an ordinal ('third')."""

    value: int | float
    span: Span
    text: str
    ordinal: bool

    @property
    def digits(self) -> str:
        """How the digitised text writes it: '23rd', '12', '1.5'."""
        if not self.ordinal:
            return str(self.value)
        n = int(self.value)
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"


class _Token:
    """What text2num reads: a word, and whether punctuation separates it from the one before."""

    __slots__ = ("separated", "word")

    def __init__(self, word: Word, separated: bool) -> None:
        self.word = word
        self.separated = separated

    def text(self) -> str:
        return self.word.lower

    def nt_separated(self, previous: object) -> bool:  # 'five, six' are two numbers
        return self.separated

    def not_a_number_part(self) -> bool:
        return False


def spelled_numbers(text: str) -> tuple[Spelled, ...]:
    """Every number written in words in `text`, in order (cached: each reader asks for the same question)."""
    return _read(text)[0]


@lru_cache(maxsize=64)  # the readers of one question share it; small, so a benchmark loop is not flattered
def _read(text: str) -> tuple[tuple[Spelled, ...], Digitised]:
    toks = words(text)
    found = _spoken_years(text, _with_scales(text, toks, _with_dozens(text, toks, _from_text2num(text, toks))))
    return tuple(found), Digitised.build(text, found)


def _from_text2num(text: str, toks: list[Word]) -> list[Spelled]:
    stream = [_Token(w, i > 0 and not _adjacent(text, toks[i - 1], w)) for i, w in enumerate(toks)]
    out: list[Spelled] = []
    for occ in _text2num_find(stream, "en", 0):
        first, last = occ.start, occ.end - 1
        if any(t.text[0].isdigit() for t in toks[first : last + 1]) or (
            last == first and toks[first].lower in _NOT_NUMBERS
        ):
            continue  # '5 thousand' is the number reader's (digits with a multiplier)
        if toks[first].lower in _SCALES and first > 0:
            if toks[first - 1].text[0].isdigit():
                continue  # '1.5 million': digits with a multiplier, read by the number reader
            if toks[first - 1].lower in ("a", "an"):
                first -= 1  # 'a hundred'
        value = occ.value
        out.append(
            _spelled(text, toks, first, last, int(value) if float(value).is_integer() else value, occ.is_ordinal)
        )
    return out


def _spelled(text: str, toks: list[Word], first: int, last: int, value: int | float, ordinal: bool) -> Spelled:
    span = (toks[first].start, toks[last].end)
    return Spelled(value, span, text[span[0] : span[1]], ordinal)


def _with_dozens(text: str, toks: list[Word], found: list[Spelled]) -> list[Spelled]:
    """'a dozen', 'half a dozen' (or 'half dozen'), 'two dozen', 'a couple of', 'a pair of', which text2num leaves
    as words."""
    ending_at = {s.span[1]: s for s in found}  # a number just before 'dozen' multiplies it
    out = list(found)
    for i, w in enumerate(toks):
        lower = w.lower
        if lower == "dozen":
            prev = toks[i - 1] if i else None
            counted = ending_at.get(prev.end) if prev is not None else None
            if counted is not None and not counted.ordinal:
                out.remove(counted)
                out.append(Spelled(counted.value * 12, (counted.span[0], w.end), text[counted.span[0] : w.end], False))
            elif i >= 2 and toks[i - 2].lower == "half" and toks[i - 1].lower in ("a", "an"):
                out.append(_spelled(text, toks, i - 2, i, 6, False))
            elif prev is not None and prev.lower == "half":  # 'top half dozen products'
                out.append(_spelled(text, toks, i - 1, i, 6, False))
            elif prev is not None and prev.lower in ("a", "an"):
                out.append(_spelled(text, toks, i - 1, i, 12, False))
            elif prev is not None and prev.lower in ("top", "first", "last", "best", "bottom"):  # 'the top dozen'
                out.append(_spelled(text, toks, i, i, 12, False))
        elif lower in _PAIRS and i and toks[i - 1].lower in ("a", "an"):
            last = i + 1 if i + 1 < len(toks) and toks[i + 1].lower == "of" else i
            if lower == "couple" or last > i:  # 'a pair' alone is a thing, 'a pair of' a count
                out.append(_spelled(text, toks, i - 1, last, 2, False))
    out.sort(key=lambda s: s.span)
    return out


SCALE_VALUES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_FRACTIONS = {"half": 0.5, "quarter": 0.25}
_PERIOD_BEFORE = frozenset({"last", "next", "this", "past", "previous", "same", "the"})  # 'the second half'


def _with_scales(text: str, toks: list[Word], found: list[Spelled]) -> list[Spelled]:
    """'a hundred grand' (100,000), 'half a million', 'a quarter million', 'a quarter of a million',
    'three quarters of a million', 'two and a half million', 'three and a quarter million': text2num reads the
    scale word alone (a million) and leaves 'grand', 'half' and 'quarter' as words. A half or a quarter of a
    year ('the first quarter', 'second half') is no fraction."""
    index = {w.start: i for i, w in enumerate(toks)}
    ends = {w.end: i for i, w in enumerate(toks)}
    out = list(found)
    for s in found:
        if s.ordinal:
            continue
        first, last = index[s.span[0]], ends[s.span[1]]
        if last + 1 < len(toks) and toks[last + 1].lower == "grand" and _adjacent(text, toks[last], toks[last + 1]):
            out[out.index(s)] = _spelled(text, toks, first, last + 1, s.value * 1_000, False)
            continue
        scale = SCALE_VALUES.get(toks[last].lower)
        if scale is None or s.value != scale:
            continue  # only a bare scale word ('a million') takes a fraction before it
        at = first - 1  # the word before the number ('half' of 'half a million', 'of' of 'a quarter of a million')
        if at >= 0 and toks[at].lower == "of":
            at -= 1
        if at < 0 or toks[at].lower.rstrip("s") not in _FRACTIONS:
            continue
        share, start = _FRACTIONS[toks[at].lower.rstrip("s")], at
        prior = toks[at - 1] if at >= 1 else None
        counted = next((n for n in out if prior is not None and n.span[1] == prior.end), None)
        if (counted is not None and counted.ordinal) or (prior is not None and prior.lower in _PERIOD_BEFORE):
            continue  # 'the first quarter', 'second half': part of a year
        if counted is not None:  # 'three quarters of a million', 'one quarter of a million'
            share, start = counted.value * share, index[counted.span[0]]
            out.remove(counted)
        elif prior is not None and prior.lower in ("a", "an"):
            start = at - 1
        whole = next(
            (n for n in out if start >= 2 and toks[start - 1].lower == "and" and n.span[1] == toks[start - 2].end), None
        )
        if whole is not None and not whole.ordinal:  # 'two and a half million', 'three and a quarter million'
            share, start = whole.value + share, index[whole.span[0]]
            out.remove(whole)
        value = share * scale
        out[out.index(s)] = _spelled(text, toks, start, last, int(value) if value.is_integer() else value, False)
    out.sort(key=lambda n: n.span)
    return out


# words before a number that make it a count or an amount, not a year ('top twenty twenty-four', 'under twenty
# ninety-nine'), and after it ('twenty ninety-nine dollars')
_NOT_A_YEAR_BEFORE = frozenset(
    {"top", "first", "last", "under", "over", "below", "above", "than", "around", "about", "priced", "cost", "costs"}
)
_NOT_A_YEAR_AFTER = frozenset({"dollars", "dollar", "bucks", "euros", "pounds", "cents", "percent", "people"})


def _spoken_years(text: str, found: list[Spelled]) -> list[Spelled]:
    """'nineteen ninety-nine', 'twenty twenty-three', 'twenty oh five': a year said as two numbers."""
    out: list[Spelled] = []
    for s in found:
        prev = out[-1] if out else None
        if prev is not None and _a_year(text, prev, s):
            out[-1] = Spelled(
                prev.value * 100 + s.value, (prev.span[0], s.span[1]), text[prev.span[0] : s.span[1]], False
            )
            continue
        out.append(s)
    return out


def _a_year(text: str, century: Spelled, rest: Spelled) -> bool:
    gap = text[century.span[1] : rest.span[0]].strip().lower()
    said_before = words(before(text, century.span[0]))
    said_after = words(after(text, rest.span[1]))
    return (
        century.text.lower() in ("nineteen", "twenty")
        and not (century.ordinal or rest.ordinal)
        and isinstance(rest.value, int)
        and ((gap == "" and 10 <= rest.value <= 99) or (gap == "oh" and 1 <= rest.value <= 9))
        and not (said_before and said_before[-1].text in _NOT_A_YEAR_BEFORE)
        and not (said_after and said_after[0].text in _NOT_A_YEAR_AFTER)
        and "$" not in before(text, century.span[0], 2)
    )


def _adjacent(text: str, left: Word, right: Word) -> bool:
    return not text[left.end : right.start].strip()


@dataclass(frozen=True)
class Digitised:
    """The lower-cased question with spelled numbers in digits, and where each rewrite came from."""

    text: str
    rewrites: tuple[tuple[int, int, int, int], ...]  # (start, end) in `text`, (start, end) in the question

    @classmethod
    def build(cls, question: str, found: list[Spelled]) -> Digitised:
        low = question.lower()
        parts: list[str] = []
        rewrites = []
        at = 0
        length = 0
        for s in found:
            parts.append(low[at : s.span[0]])
            length += s.span[0] - at
            parts.append(s.digits)
            rewrites.append((length, length + len(s.digits), s.span[0], s.span[1]))
            length += len(s.digits)
            at = s.span[1]
        parts.append(low[at:])
        return cls("".join(parts), tuple(rewrites))

    def position(self, at: int, *, end: bool = False) -> int:
        """A position in `text` as a position in the question; inside a rewrite, the rewrite's edge."""
        shift = 0  # the text between rewrites is the question's own, moved by the rewrites before it
        for new_start, new_end, old_start, old_end in self.rewrites:
            if at <= new_start:
                break
            if at < new_end or (end and at == new_end):
                return old_end if end else old_start
            shift = old_end - new_end
        return at + shift

    def original(self, span: Span) -> Span:
        return self.position(span[0]), self.position(span[1], end=True)


def digitised(text: str) -> Digitised:
    """`text` lower-cased with every spelled number written in digits ('june fifteenth' -> 'june 15th')."""
    return _read(text)[1]
