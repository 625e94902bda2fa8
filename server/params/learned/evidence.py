"""How the learned extractor's labels weigh the deterministic readers' candidates: the one rule.

For a parameter the model was trained on (it has marked examples), each candidate is judged by the
model's probability that the candidate's words belong to that parameter:
- supported (>= SUPPORTED): the candidate is raised above every unsupported one, so roles follow the
  model ('from boston to denver': boston fills from_city, not to_city);
- placed in another parameter of the template (>= SUPPORTED): dropped, the words belong there;
- confidently no value at all (outside >= OUTSIDE_SURE): a guess (fuzzy, partial or free-text name), or a
  weak candidate of an optional parameter, is dropped ('book' is not the city 'brook'); a strong reader's
  value stays, lowered, so that incomplete annotations do not hide it and a missing value is not asked for;
- otherwise lowered in proportion to the support.
Words the model labels as a parameter that no candidate covers become a candidate of their own
(extractor 'learned'): an open-vocabulary name, a number or a date the readers did not tie to it.
Parameters the model does not know keep their candidates as they are.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...templates import ParameterSpec, ParameterType
from ..candidates import Candidate, item_type
from ..spans import Unreadable, read_value, typed_value
from ..text import COURTESY, PRONOUNS, Span, Word, inside, overlaps, words, wordset
from ..value_list import ValueList
from .tagger import Tagging

SUPPORTED = 0.5
OUTSIDE_SURE = 0.8
STRONG = 0.9  # a reader's candidate this sure stands on its own (an exact list value, a counted number)
GUESSES = frozenset({"fuzzy", "partial_name", "proper_name", "cued_name", "tail_name"})
_TEXT = (ParameterType.STRING, ParameterType.ENUM)
_DATED = frozenset({"date", "datetime", "time"})  # the readers of days and clock times
# words a name does not end in: the model ran on into a date's preposition or the next clause's negation
_NO_TAIL = wordset(
    "on at in for by from to of the a an and or but with not no doesn't don't isn't won't can't doesnt dont i i'm im "
    "i'd i've i'll we we're it it's"  # 'Rome, I'm a smoker'
)

# words that point at a place or a thing the conversation knows and name none ('this city', 'the area', 'here')
_POINTING = (
    wordset(
        "this that these those here there the a an my our your all another other same some any "
        "every city area town place region neighborhood neighbourhood vicinity locality spot regard one ones"
    )
    | PRONOUNS
)


@dataclass
class Dropped:
    """A value found in the question and left out, with why (reported in metadata.extraction_left_out)."""

    name: str
    text: str
    span: Span | None
    reason: str
    score: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "text": self.text, "reason": self.reason}
        if self.span is not None:
            out["span"] = list(self.span)
        if self.score is not None:
            out["score"] = round(self.score, 4)
        return out


@dataclass
class Judged:
    spec: ParameterSpec
    stored: ValueList | None
    candidates: list[Candidate]
    ordinary: frozenset[str] = frozenset()  # words the template's examples use outside any value


def word_range(toks: Sequence[Word], span: Span) -> tuple[int, int]:
    inside = [i for i, t in enumerate(toks) if overlaps(t.span, span)]
    return (inside[0], inside[-1]) if inside else (0, -1)


def weigh(
    params: list[Judged],
    tagging: Tagging,
    toks: Sequence[Word],
    question: str,
    today: dt.date,
    known: frozenset[str],
    future: bool = False,
    said_when: Sequence[Span] = (),
    wording: frozenset[str] = frozenset(),
) -> list[Dropped]:
    """Re-score every known parameter's candidates in place and add the learned ones; what was dropped.
    `said_when`: where the readers found a day or a time of day, whether or not a parameter takes it;
    `wording`: the words the adapter's annotated examples only ever use around values (annotated_wording)."""
    dropped: list[Dropped] = []
    # a date or a time a reader is sure of is no part of a name: 'seattle tomorrow' is a city and a day, and 'in
    # the morning' is no city where no parameter takes a time
    dated = [c.span for p in params for c in p.candidates if c.span and c.extractor in _DATED and c.score >= STRONG]
    dated += list(said_when)
    texts = frozenset(p.spec.name for p in params if item_type(p.spec) in _TEXT)
    for p in params:
        name = p.spec.name
        if name not in known:
            continue
        learned, wider = _learned(p, tagging, toks, question, today, future, dated, wording)
        kept = []
        for cand in p.candidates:
            if cand.span is not None and any(inside(cand.span, w) for w in wider):
                dropped.append(Dropped(name, cand.text, cand.span, "learned: part of a longer value", cand.score))
                continue
            verdict = _judge(cand, p.spec, tagging, toks, known - texts if cand.span in dated else known)
            if isinstance(verdict, str):
                dropped.append(Dropped(name, cand.text, cand.span, verdict, cand.score))
            else:
                cand.score, cand.learned = verdict
                kept.append(cand)
        p.candidates = kept + learned
    return dropped


def _judge(
    cand: Candidate, spec: ParameterSpec, tagging: Tagging, toks: Sequence[Word], known: frozenset[str]
) -> tuple[float, float] | str:
    """(new score, support) or the reason the candidate is dropped."""
    if cand.span is None:
        return cand.score, 0.0
    first, last = word_range(toks, cand.span)
    support = tagging.support(spec.name, first, last)
    if cand.cued:  # the words before it name its parameter: surer than the model's reading
        return cand.score, support
    if support >= SUPPORTED:
        # above every unsupported candidate; among supported ones, the one that covers the model's whole
        # run ('London, England', not 'London'), then the surer reader, wins
        covered = _coverage(tagging, spec.name, first, last)
        return 0.9 + 0.04 * support + 0.03 * covered + 0.03 * min(cand.score, 1.0), support
    elsewhere = max((tagging.support(q, first, last) for q in known if q != spec.name), default=0.0)
    if elsewhere >= SUPPORTED:
        return f"learned: the words fill another parameter ({elsewhere:.2f})"
    outside = tagging.outside(first, last)
    if outside >= OUTSIDE_SURE and (cand.extractor in GUESSES or (not spec.required and cand.score < STRONG)):
        return "learned: not a value of this parameter here"
    return cand.score * (0.6 + 0.4 * support), support


def _coverage(tagging: Tagging, name: str, first: int, last: int) -> float:
    """The share of the model's labelled run (around the candidate) that the candidate's words cover."""
    for run_name, start, end in tagging.spans():
        if run_name == name and start <= last and first <= end:
            inside = min(end, last) - max(start, first) + 1
            return inside / (end - start + 1)
    return 0.0


def _learned(
    p: Judged,
    tagging: Tagging,
    toks: Sequence[Word],
    question: str,
    today: dt.date,
    future: bool,
    dated: Sequence[Span] = (),
    wording: frozenset[str] = frozenset(),
) -> tuple[list[Candidate], list[Span]]:
    """Candidates for the words the model labels as this parameter where no reader's candidate covers them
    (unless every one of them is an ordinary word of the template's examples), or where the model's span
    is wider than the readers' ('Phoenix, AZ' over 'Phoenix' and 'AZ'; '240 Castro Street' over 'Castro
    Street'): then the whole span is the value, and the spans it replaces."""
    out: list[Candidate] = []
    wider: list[Span] = []
    for name, first, last in _within_sentences(tagging.spans(), toks, question):
        while last > first and toks[last].lower in COURTESY:  # 'London Please': the model ran on
            last -= 1
        if item_type(p.spec) in _TEXT:  # 'seattle tomorrow': the day a reader is sure of is not the city's
            while last > first and any(overlaps(toks[last].span, d) for d in dated):
                last -= 1
            while first < last and any(overlaps(toks[first].span, d) for d in dated):
                first += 1
            if any(overlaps(toks[first].span, d) for d in dated):
                continue  # 'the morning': all of it a time
            while last > first and toks[last].lower in _NO_TAIL:  # 'apartments on' (the 7th), "london, doesn't"
                last -= 1
        if name != p.spec.name or toks[last].lower in COURTESY:
            continue
        if all(w.text.islower() and w.lower in _POINTING for w in toks[first : last + 1]):
            continue  # 'in this city', 'around here', 'their account': words that point, and name nothing
        span = (toks[first].start, toks[last].end)
        if item_type(p.spec) in _TEXT and _owner_of_next(toks, first, last, question, p.ordinary):
            span = (span[0], span[1] - 2)  # "Alan Walker's songs": the name, not its possessive
        inner = [c.span for c in p.candidates if c.span is not None and overlaps(c.span, span)]
        text = question[span[0] : span[1]]
        support = tagging.support(name, first, last)
        if inner:
            if support < SUPPORTED or not _wider(span, inner, question) or item_type(p.spec) not in _TEXT:
                continue  # the readers' candidates there are weighed as they are
            try:
                value: Any = read_value(p.spec, text, today, p.stored, future)
            except Unreadable:
                continue
            if _strict_stranger(p, value):
                continue
            wider.append(span)
            score = 0.9 + 0.09 * support
        else:
            if all(w.lower in p.ordinary or (w.text.islower() and w.lower in wording) for w in toks[first : last + 1]):
                continue  # 'the', 'take', 'the area', 'in particular': words examples use around values, never as one
            try:  # validated with the others when values are assigned: a value out of bounds is reported
                value = typed_value(p.spec, text, today, p.stored, future)
            except Unreadable:
                if not (p.spec.allowed_values or p.stored):
                    continue  # not a number/date at all: nothing to offer
                value = text  # a closed list's stranger: validation reports it, with the nearest values
            score = 0.6 + 0.35 * support
        cand = Candidate(name, value, span, text, "learned", score, key=("learned", span))
        cand.learned = support
        out.append(cand)
    return out, wider


def _owner_of_next(toks: Sequence[Word], first: int, last: int, question: str, ordinary: frozenset[str]) -> bool:
    """Words `first` to `last` are a person's name in the possessive of the noun after it, a word the
    template's examples use ("Alan Walker's songs", "Jah Cure's music"); not a name that ends in one
    ("Trader Vic's restaurant", "Trader Joe's hours", "Denny's tonight")."""
    if not toks[last].text.endswith(("'s", "’s")) or last + 1 >= len(toks) or first == last:
        return False  # a single word's is more often a shop's own name ('Macy's hours', "Lowe's near me")
    nxt = toks[last + 1]
    return (
        question[toks[last].end : nxt.start] == " "
        and nxt.text.islower()
        and nxt.lower in ordinary
        and nxt.lower not in _NO_TAIL | _OWN_NAME_NOUNS
    )


# nouns a name ending in 's is the name of ("Trader Vic's restaurant"), and the days and hours it is said with
_OWN_NAME_NOUNS = wordset(
    "restaurant restaurants place diner bar cafe pub grill kitchen shop store bakery tavern inn hotel salon "
    "hours menu near open location locations branch tonight today tomorrow now tonite morning evening afternoon"
)


_ABBREVIATION = 3  # 'St. Louis', 'Mt. Hood', 'Dr. Who': a dot after a short word does not end a sentence


def _within_sentences(
    runs: list[tuple[str, int, int]], toks: Sequence[Word], question: str
) -> list[tuple[str, int, int]]:
    """The model's runs cut where a sentence ends between two of their words ('in Petaluma. Any ideas')."""
    out = []
    for name, first, last in runs:
        start = first
        for i in range(first, last):
            gap = question[toks[i].end : toks[i + 1].start]
            if any(c in gap for c in "?!;") or ("." in gap and len(toks[i].text) > _ABBREVIATION):
                out.append((name, start, i))
                start = i + 1
        out.append((name, start, last))
    return out


def _strict_stranger(p: Judged, value: Any) -> bool:
    """A value a strict values_from list does not hold (a wider span must not replace listed values with it)."""
    strict = p.stored is not None and p.spec.values_from is not None and p.spec.values_from.strict
    return strict and p.stored is not None and p.stored.canonical(str(value)) is None


def _wider(span: Span, inner: list[Span], question: str) -> bool:
    """No single reader's candidate covers the model's whole span, and what the span adds to a capitalised
    name is not only lower-case words ('Rome Flynn appearing' is the name 'Rome Flynn' and a verb)."""
    if any(inside(span, s) for s in inner):
        return False
    covered = [False] * (span[1] - span[0])
    for s in inner:
        for i in range(max(s[0], span[0]), min(s[1], span[1])):
            covered[i - span[0]] = True
    added = [w for w in words(question[span[0] : span[1]]) if not any(covered[w.start : w.end])]
    named = any(question[s[0] : s[0] + 1].isupper() for s in inner)
    return not (named and added and all(w.text.isalpha() and w.text.islower() for w in added))
