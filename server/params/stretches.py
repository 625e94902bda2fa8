"""Which end of a stay a date fills: 'pick it up on Saturday and drop it off on the 8th'.

A template with two single dates that open and close one stretch of time (pickup_date and dropoff_date,
check_in_date and check_out_date, departure_date and return_date: names the date reader gives no start
or end role, so each would take any day said) places the days a question says by their words, whatever
few examples a learned extractor was fitted on:
- 'from March 4 until the 8th', 'Saturday this week until March 8th': the range's first day opens it and
  its last day closes it;
- a day after a closing word ('until the 14th', 'drop it off on the 4th', 'return the 5th of March',
  'check out on March 6') closes it; after an opening word ('from March 2nd', 'pick it up on the 3rd',
  'check in on March 4') it opens it;
- a day said without such a word opens the stretch ('a rental car on March 4th'), or closes it when
  another day already opens it and it is not earlier ('a party on March 11th ... a car from the 10th').
A bound ('by Friday', 'after March 3') fills neither end. Two days said without a word keep the other
readers' reading. A template (or a reply) with only one of the two ends takes the days said for it or said
plainly, never one said for the other end: a check-in date is not 'check out sunday'.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..templates import ParameterSpec, ParameterType
from .candidates import Candidate, when_key
from .dates import DateMention
from .directions import CUED
from .roles import Role, role_of
from .text import name_tokens

End = Literal["opens", "closes"]

_OPENING_NAMES = frozenset({"pickup", "checkin", "departure", "depart", "outbound"})
_CLOSING_NAMES = frozenset({"dropoff", "checkout", "return", "returning", "inbound"})
_OPENING_PAIRS = ({"check", "in"}, {"pick", "up"})
_CLOSING_PAIRS = ({"check", "out"}, {"drop", "off"})
_AFTER = r"(?:\s+(?:it|on|by|the|at|for))*\s*$"  # 'drop it off on the', 'return on'
# a closing word reaches its day across what it returns: 'a return date of', 'return the car on the' (an opening
# word does not: 'back from my trip on the 9th' opens nothing); 'a return flight' may be a round trip's first
_AFTER_CLOSING = r"(?:\s+(?:it|on|by|the|at|for|of|a|date|day|car))*\s*$"
_OPENING_CUE = re.compile(
    r"(?:\bfrom|\bstart(?:s|ing)?|\bbeginning|\bpick(?:s|ing)?\s+(?:it\s+|them\s+)?up|\bpickup|"
    r"\bcheck(?:s|ing)?\s+in|\bcheck-in|\bdepart(?:s|ing)?|\bdeparture|\bfly(?:ing)?\s+out|\bget\s+(?:it|there))"
    + _AFTER,
    re.IGNORECASE,
)
_CLOSING_CUE = re.compile(
    r"(?:\buntil|\bunti[il]|\btill|\btil|\bthrough|\bthru|\bup\s+to|\breturning\s+flights?|\breturn(?:s|ing)?|\bback|\bdrop(?:s|ping)?"
    r"\s+(?:it\s+|them\s+)?off|\bdrop-?off|\bcheck(?:s|ing)?\s+out|\bcheck-?out|\bbring(?:ing)?\s+(?:it\s+)?back)"
    + _AFTER_CLOSING,
    re.IGNORECASE,
)
# the words a date reader keeps in the day's own text ('until the 8th', 'from the 4th of March')
_OWN_CLOSING = re.compile(r"^(?:until|untill|till|til|through|thru)\b", re.IGNORECASE)
_OWN_OPENING = re.compile(r"^(?:from|starting|beginning)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Stretch:
    """The date parameters of a template that open and close one stretch of time; one of them may be
    missing (a hotel booking with a check-in date and a number of nights: 'check out sunday' is no check-in)."""

    opens: ParameterSpec | None
    closes: ParameterSpec | None


def stretch_of(specs: Sequence[ParameterSpec]) -> Stretch | None:
    """The pair, when at most one date parameter opens and at most one closes (by their names), and one does."""
    ends: dict[End, list[ParameterSpec]] = {"opens": [], "closes": []}
    for spec in specs:
        end = _end_of(spec)
        if end is not None:
            ends[end].append(spec)
    if len(ends["opens"]) > 1 or len(ends["closes"]) > 1 or not (ends["opens"] or ends["closes"]):
        return None
    return Stretch(next(iter(ends["opens"]), None), next(iter(ends["closes"]), None))


def _end_of(spec: ParameterSpec) -> End | None:
    if spec.type is not ParameterType.DATE or role_of(spec) is not Role.POINT:
        return None
    tokens = name_tokens(spec.name)
    opens = bool(tokens & _OPENING_NAMES) or any(pair <= tokens for pair in _OPENING_PAIRS)
    closes = bool(tokens & _CLOSING_NAMES) or any(pair <= tokens for pair in _CLOSING_PAIRS)
    if opens == closes:
        return None
    return "opens" if opens else "closes"


def placed(
    stretch: Stretch, question: str, mentions: Sequence[DateMention], today: dt.date, future: bool
) -> dict[str, list[Candidate]] | None:
    """The days each end of the stretch takes from the question (above), by parameter name; None when the
    question's days do not say (no day, or two days without a word), and the readers' candidates stand.
    A bound is no end: 'by Friday', 'after March 3', 'before the 8th' fill neither."""
    opening: list[tuple[DateMention, dt.date]] = []
    closing: list[tuple[DateMention, dt.date]] = []
    free: list[tuple[DateMention, dt.date]] = []
    for d in mentions:
        head = question[max(0, d.span[0] - 40) : d.span[0]]
        if d.operator == "between" and d.start is not None and d.end is not None and d.start != d.end:
            if not (future and d.start < today):  # a range read into the past is no booking
                opening.append((d, d.start))
                closing.append((d, d.end))
        elif d.end is not None and (_OWN_CLOSING.match(d.text) or (d.single_day and _CLOSING_CUE.search(head))):
            closing.append((d, d.end))
        elif d.start is not None and (_OWN_OPENING.match(d.text) or (d.single_day and _OPENING_CUE.search(head))):
            opening.append((d, d.start))
        elif d.single_day and d.start is not None and d.operator is None:
            free.append((d, d.start))
    if len(free) > 1 or not (opening or closing or free):
        return None
    if stretch.opens is None or stretch.closes is None:  # a day said plainly is the one end there is
        (opening if stretch.closes is None else closing).extend(free)
        free = []
    said = {day for _, day in opening + closing}
    for d, day in free:  # one day said plainly opens the stretch, or closes it after the day that opens it
        if day in said or (opening and closing):
            continue
        if opening:
            if day >= max(day for _, day in opening):
                closing.append((d, day))
        elif not closing or day <= min(day for _, day in closing):
            opening.append((d, day))
    out = {}
    if stretch.opens is not None:
        out[stretch.opens.name] = [_candidate(stretch.opens, d, day, "opens") for d, day in opening]
    if stretch.closes is not None:
        out[stretch.closes.name] = [_candidate(stretch.closes, d, day, "closes") for d, day in closing]
    return out


def _candidate(spec: ParameterSpec, d: DateMention, day: dt.date, end: End) -> Candidate:
    # a range's words fill both ends (candidates of two ends of one range may share their words)
    key = when_key("date", end)
    # cued: the words around it placed it, and a learned model's reading does not drop it
    return Candidate(spec.name, day.isoformat(), d.span, d.text, "date", CUED, key=key, shareable=True, cued=True)
