"""Turn the mentions found in a question into scored candidate values for each parameter.

A candidate is (parameter, value, span, extractor, score). Scores say how clearly the words
around a mention point at this parameter: 'top 10' at a limit 0.95, a bare number at a required
number 0.5, a bare number at an optional limit not at all (no guessing), 'party of 7' at a
party size 0.9 even when it is optional.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from ..templates import ParameterSpec, ParameterType
from .choices import ChoiceMatch
from .dates import DateMention, ImpossibleDate
from .numbers import COUNTED, CURRENCY_WORD, NumberMention
from .roles import Role, counted_nouns, year_bound
from .strings import TextMatch
from .text import Span, inside, name_tokens, overlaps
from .times import END_OF_DAY, DatedTime, TimeMention, as_value

# Date and time candidates are keyed (WHEN, what they fill, role): one span may fill a date and a time
# ('tonight', 'friday at 3 pm' for a date and a time parameter) and a range may fill a start and an end,
# but one day never fills two date parameters. Date mentions never overlap each other, nor do time
# mentions, so the words they share are always one expression read twice.
WHEN = "when"


def when_key(kind: str, role: Role | str) -> tuple[str, str, str]:
    return (WHEN, kind, str(role))


@dataclass
class Candidate:
    param: str
    value: Any
    span: Span | None
    text: str
    extractor: str
    score: float
    key: object = None  # the mention it came from; date ranges may fill a start and an end
    shareable: bool = False
    learned: float | None = None  # the learned extractor's support for these words filling this parameter
    # words that name its parameter: a cue ('from Delhi' for an origin: params/directions.py) or a word the
    # examples use for the value ('concert' for Music: params/implied.py); a learned model does not drop it
    cued: bool = False
    compared: str | None = None  # how the words compare a number with it: 'gt', 'gte', 'lt', 'lte' (bounds.py)


def may_share(a: Candidate, b: Candidate) -> bool:
    """Whether two candidates over the same words may both be used (see `when_key`)."""
    return a.shareable and b.shareable and a.key != b.key and _is_when(a.key) and _is_when(b.key)


def _is_when(key: object) -> bool:
    return isinstance(key, tuple) and len(key) == 3 and key[0] == WHEN


def item_type(spec: ParameterSpec) -> ParameterType:
    return spec.item_type or ParameterType.STRING if spec.type is ParameterType.ARRAY else spec.type


def closed(spec: ParameterSpec) -> bool:
    """The parameter takes only the values of its list (allowed values, a strict values_from list)."""
    return bool(spec.allowed_values or (spec.values_from is not None and spec.values_from.strict))


def free_text(spec: ParameterSpec) -> bool:
    """The parameter takes any text (a string without a closed list): a name, a place, a title."""
    return item_type(spec) in (ParameterType.STRING, ParameterType.ENUM) and not closed(spec)


# --- numbers -------------------------------------------------------------------------------
def number_candidates(spec: ParameterSpec, role: Role, mentions: list[NumberMention]) -> list[Candidate]:
    out = []
    names = name_tokens(spec.name) - {"id", "no", "number", "min", "max", "limit"}
    nouns = counted_nouns(spec) if role is Role.QUANTITY else frozenset()
    for m in mentions:
        if m.time_unit and not (m.counted and m.counted in nouns):  # '3 nights' counts nights, '15 days' is a span
            continue
        if m.ordinal and role is not Role.GENERIC:  # 'the 3rd' is a position, a day: no count, limit or bound
            continue
        score = _quantity_score(spec, m, nouns) if role is Role.QUANTITY else _number_score(spec, role, m, names)
        if score > 0:
            said = m.cmp or {"low": "gte", "high": "lte"}.get(m.range_role or "")  # 'between 10 and 20' holds both
            out.append(Candidate(spec.name, m.value, m.span, m.text, m.reader, score, key=id(m), compared=said))
    return out


_SCALE_AFTER = re.compile(rf"\s+(?:hundred|thousand|million|grand)(?:\s+{CURRENCY_WORD})?\b", re.I)


def amount_candidates(spec: ParameterSpec, mentions: list[NumberMention], question: str) -> list[Candidate]:
    """An amount of money kept as text, in the words it was said in ('780 dollars', '$1,290'): a number said as
    money 0.9; a bare one only for a required parameter (0.5), and never a year, a position, a count of
    something, a span of time, a rank or an identifier."""
    out = []
    for m in mentions:
        if m.ordinal or m.time_unit or m.counted or m.top or m.id_cue:
            continue
        if m.currency or m.multiplied:
            score = 0.9
        elif spec.required and not m.year_like:
            score = 0.5
        else:
            continue
        end = m.span[1]
        if (scale := _SCALE_AFTER.match(question, end)) is not None:  # '2 hundred bucks': the digits' scale word
            end = scale.end()
        span = (m.span[0], m.money_end if m.money_end and m.money_end > end else end)
        said = question[span[0] : span[1]]
        out.append(Candidate(spec.name, said, span, said, m.reader, score, key=id(m)))
    return out


def _number_score(spec: ParameterSpec, role: Role, m: NumberMention, names: set[str]) -> float:
    required = spec.required
    named = bool(names) and bool(re.search(r"\b(?:" + "|".join(map(re.escape, names)) + r")s?\W*$", m.preceding))
    match role:
        case Role.YEAR:
            if not m.year_like:
                return 0.0
            return 0.92 if re.search(r"\b(?:in|for|during|of|year|fy)\s*$", m.preceding) else 0.88
        case Role.LIMIT:
            if m.currency or m.cmp in ("gt", "lt") or m.range_role or m.id_cue:
                return 0.0
            if m.top:
                return 0.95
            if m.count_cue and not m.year_like:
                return 0.85
            if m.cmp == "lte" and not m.year_like:  # 'max 200', 'up to 20'
                return 0.8
            return 0.4 if required and not m.year_like else 0.0
        case Role.LOWER:
            if m.cmp in ("gt", "gte"):
                return 0.95
            if m.cmp in ("lt", "lte") or m.top or m.id_cue:
                return 0.0
            return (0.6 if named else 0.5) if required and not (m.year_like and not m.currency) else 0.0
        case Role.UPPER:
            if m.cmp in ("lt", "lte"):
                return 0.95
            if m.cmp in ("gt", "gte") or m.top or m.id_cue:
                return 0.0
            return (0.6 if named else 0.5) if required and not (m.year_like and not m.currency) else 0.0
        case Role.IDENTIFIER:
            if m.currency or m.cmp or m.multiplied or m.range_role:
                return 0.0
            if m.id_cue or named:
                return 0.95
            return 0.55 if required else 0.0
        case _:
            if m.ordinal:
                return 0.85 if named else 0.45 if required else 0.0
            if named:
                return 0.85
            if m.cmp or m.top:
                return 0.6 if required else 0.0
            return 0.5 if required else 0.0


def _quantity_score(spec: ParameterSpec, m: NumberMention, nouns: frozenset[str]) -> float:
    """How many people, seats, rooms: '4 seats' for number_of_seats 0.95, 'party of 7' or '3 people' for a
    party size 0.9, 'a table for five' 0.85, a bare number only when required; '2 rooms' never fills seats."""
    if m.currency or m.top or m.id_cue or m.year_like or m.cmp in ("gt", "lt"):
        return 0.0
    groups = {COUNTED[n] for n in nouns}
    if m.counted is not None:
        if m.counted in nouns:
            return 0.95
        return 0.9 if COUNTED[m.counted] in groups else 0.0
    if m.for_cue and "people" in groups:
        return 0.85
    return 0.5 if spec.required and not m.range_role else 0.0


# --- dates and times -----------------------------------------------------------------------
def impossible_date_candidates(
    spec: ParameterSpec, role: Role, question: str, impossible: list[ImpossibleDate]
) -> list[Candidate]:
    """A date written that is none ('2024-06-31', 'February 30, 2024') as the words it is: validation reports
    it and the parameter is asked for, where the default (a range's 1900 to 2099) would have answered. Of two,
    a range's start takes the first and its end the last; one after 'after' is a start's, after 'until' an
    end's."""
    said = impossible
    if role in (Role.START, Role.END) and len(said) >= 2:
        said = [said[0] if role is Role.START else said[-1]]
    elif role is Role.START:
        said = [d for d in said if d.bound != "end"]
    elif role is Role.END:
        said = [d for d in said if d.bound != "start"]
    out = []
    for d in said:
        text = question[d.span[0] : d.span[1]]
        out.append(Candidate(spec.name, text, d.span, text, "date", 0.9, key=("impossible", d.span)))
    return out


def date_candidates(
    spec: ParameterSpec,
    role: Role,
    mentions: list[DateMention],
    today: dt.date,
    time_of: dict[int, DatedTime] | None = None,
) -> list[Candidate]:
    """Start/end/point values from date mentions; a required end after 'since X' is today. A datetime
    parameter takes the time said with the date (`time_of`, by id of the date mention): 'friday at 3 pm'."""
    out = []
    as_datetime = item_type(spec) is ParameterType.DATETIME
    ends = _two_days(mentions)
    for d in mentions:
        picked: tuple[dt.date, dt.time | None, float] | None = None
        if role is Role.START and d.start is not None:
            picked = (d.start, d.start_time, 0.95 if d.operator in ("since", "after", "between") else 0.9)
            if ends:
                picked = (d.start, d.start_time, 0.93 if d is ends[0] else 0.86)
        elif role is Role.END and d.end is not None and d.operator not in ("since", "after"):
            picked = (d.end, d.end_time, 0.95 if d.operator in ("until", "before", "between") else 0.9)
            if ends:
                picked = (d.end, d.end_time, 0.93 if d is ends[1] else 0.86)
        elif role is Role.END and spec.required and d.operator in ("since", "after") and d.start and d.start <= today:
            picked = (today, None, 0.7)
        elif role in (Role.POINT, Role.GENERIC) and d.single_day and d.start is not None and d.operator is None:
            picked = (d.start, d.start_time, 0.93)
        if picked is None:
            continue
        day, time, score = picked
        span, text, extractor = d.span, d.text, "date"
        if as_datetime:
            said = (time_of or {}).get(id(d))
            if said is not None and (clock := said.time.end if role is Role.END else said.time.start) is not None:
                time, score, extractor = clock, min(score + 0.02, 0.97), "datetime"
                span, text = said.span, said.text
            default_time = dt.time(23, 59, 59) if role is Role.END else dt.time(0, 0)
            if time == END_OF_DAY and role is Role.END:
                time = default_time
            value: Any = dt.datetime.combine(day, time or default_time).isoformat()
        else:
            value = day.isoformat()
        key = when_key("date", role)
        out.append(Candidate(spec.name, value, span, text, extractor, score, key=key, shareable=True))
    return out


def _two_days(mentions: list[DateMention]) -> tuple[DateMention, DateMention] | None:
    """Two plain days and no other date ('june 1st 2024 and june 10th 2024', a reply to a question asking
    for both ends): the earlier opens a start/end pair, the later closes it; each alone would fill both."""
    if len(mentions) != 2 or any(d.operator is not None or not d.single_day for d in mentions):
        return None
    first, second = sorted(mentions, key=lambda d: d.start or dt.date.min)
    return None if first.start == second.start else (first, second)


def time_candidates(spec: ParameterSpec, role: Role, mentions: list[TimeMention]) -> list[Candidate]:
    """'after 3 pm' fills a start time, 'before noon' an end, 'in the morning' both, and a point time takes
    one clock time ('at 3:30 pm'), never a range."""
    out = []
    for t in mentions:
        picked: tuple[dt.time, float] | None = None
        if role is Role.START and t.start is not None:
            picked = (t.start, 0.95 if t.operator in ("after", "between") else 0.9)
        elif role is Role.END and t.end is not None:
            picked = (t.end, 0.95 if t.operator in ("before", "between") else 0.9)
        elif role in (Role.POINT, Role.GENERIC) and t.point and t.start is not None:
            picked = (t.start, 0.93)
        elif role in (Role.POINT, Role.GENERIC) and t.clock and t.operator in ("after", "before"):
            clock = t.start if t.operator == "after" else t.end  # 'after 5 pm' for a departure time: 17:00,
            picked = (clock, 0.8) if clock is not None else None  # less sure than a time said plainly
        if picked is not None:
            value = as_value(picked[0])
            key = when_key("time", role)
            out.append(Candidate(spec.name, value, t.span, t.text, "time", picked[1], key=key, shareable=True))
    return out


def outside_clock_times(cands: list[Candidate], times: list[TimeMention]) -> list[Candidate]:
    """The words of a clock time are the time's: the 7 of '7 pm' is no party size, its 'pm' no allowed value."""
    clocks = [t.span for t in times if t.clock]
    return [c for c in cands if c.span is None or not any(inside(c.span, s) for s in clocks)]


def outside_days(cands: list[Candidate], dates: list[DateMention]) -> list[Candidate]:
    """The words of a day are the day's: the 8 of 'march 8' (or of 'from march 8 to march 11') is no number of
    nights, nor a listed value '8'; a date reader's own candidate keeps its words, and so does any reader's
    inside a bare year."""
    days = [d.span for d in dates if d.grain != "year"]
    return [
        c
        for c in cands
        if c.span is None or c.extractor in ("date", "datetime") or not any(inside(c.span, s) for s in days)
    ]


def year_from_dates(spec: ParameterSpec, mentions: list[DateMention]) -> list[Candidate]:
    """'this year', 'last year', 'fiscal year 2024' for an integer year parameter; the first or last year of
    'the fifties', 'since 1990', 'between 1990 and 1995' for a start or end year. A decade gives a single
    year parameter nothing: which of its ten years was meant is the user's to say."""
    bound = year_bound(spec)
    if bound is not None:
        return _bound_years(spec, bound, mentions)
    out = []
    for d in mentions:
        if d.year is not None:
            out.append(Candidate(spec.name, d.year, d.span, d.text, "date", 0.93, key=id(d)))
        elif d.operator is None and d.start and d.end and d.start.year == d.end.year and d.grain != "span":
            out.append(Candidate(spec.name, d.start.year, d.span, d.text, "date", 0.6, key=id(d)))
    return out


def _bound_years(spec: ParameterSpec, bound: str, mentions: list[DateMention]) -> list[Candidate]:
    out = []
    for d in mentions:
        day = d.start if bound == "start" else d.end
        if day is None:
            continue
        score = 0.95 if d.operator is not None or d.grain in ("decade", "span") else 0.9
        key = when_key("year", bound)
        out.append(Candidate(spec.name, day.year, d.span, d.text, "date", score, key=key, shareable=True))
    return out


# --- closed lists --------------------------------------------------------------------------
def choice_candidates(spec: ParameterSpec, matches: list[ChoiceMatch]) -> list[Candidate]:
    """Matches of a closed list; a guess (an everyday word such as 'us' read as the code 'US') only for a
    required parameter, like a bare number: an optional one is better left unset than guessed."""
    return [
        Candidate(spec.name, m.value, m.span, m.text, m.extractor, m.score, key=("choice", m.span))
        for m in matches
        if spec.required or not m.guess
    ]


# --- free text -----------------------------------------------------------------------------
def text_candidates(
    spec: ParameterSpec,
    role: Role,
    quoted: list[TextMatch],
    emails: list[TextMatch],
    names: list[TextMatch],
    cued: list[TextMatch],
    patterned: list[TextMatch],
) -> list[Candidate]:
    out = [_text(spec, t, t.score) for t in quoted + patterned]
    for t in emails:
        out.append(_text(spec, t, 0.95 if role is Role.EMAIL else 0.5))
    if spec.pattern is None and role is not Role.EMAIL:
        bonus = 0.05 if role is Role.NAME else -0.1
        out += [_text(spec, t, t.score + bonus) for t in names]
        out += [_text(spec, t, t.score + bonus) for t in cued]
    return out


def _text(spec: ParameterSpec, t: TextMatch, score: float) -> Candidate:
    return Candidate(spec.name, t.value, t.span, t.value, t.extractor, round(score, 4), key=("text", t.span))


_OPINIONS = frozenset({"number", "number_words", "date", "time", "boolean"})


def role_opinion(c: Candidate) -> bool:
    """A reader's candidate sure enough of its parameter to tell the learned extractor (lists have their own
    marks; guesses are not opinions)."""
    return c.extractor in _OPINIONS and c.score >= 0.85


def as_list(spec: ParameterSpec, cands: list[Candidate]) -> list[Candidate]:
    """An array parameter takes every distinct clear value, as one candidate spanning them all."""
    picked: list[Candidate] = []
    for c in sorted(cands, key=lambda c: -c.score):
        if c.score < 0.7 or any(c.span and p.span and overlaps(c.span, p.span) for p in picked):
            continue
        if any(str(p.value).casefold() == str(c.value).casefold() for p in picked):
            continue
        picked.append(c)
    if not picked:
        return []
    picked.sort(key=lambda c: c.span[0] if c.span else 0)
    spans = [c.span for c in picked if c.span]
    span = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    text = ", ".join(c.text for c in picked)
    return [
        Candidate(
            spec.name,
            [c.value for c in picked],
            span,
            text,
            picked[0].extractor,
            min(c.score for c in picked),
            key=("list", span),
        )
    ]
