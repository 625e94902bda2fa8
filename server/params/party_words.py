"""People counted without a number, the way a booking says it: "just me" is one, "me and my wife" two, "2
adults and 3 kids" five. Read as number mentions that count people, so a party size, a number of
travellers or riders takes them as it takes "for 2 people" (numbers.py `find_numbers`)."""

from __future__ import annotations

import re

_ALONE = re.compile(r"\b(?:(?:just|only)\s+(?:me|myself|one\s+person)|by\s+myself|me\s+alone|on\s+my\s+own)\b", re.I)
_COMPANION = (
    r"(?:wife|husband|partner|spouse|friend|girlfriend|boyfriend|fianc[eé]e?|son|daughter|kid|child|mom|mum|"
    r"mother|dad|father|brother|sister|colleague|coworker|boss|buddy|roommate)"
)
_FRIENDS = rf"(?:{_COMPANION}s?|children|buddies)"  # who goes with me
_COMPANIONS = rf"(?:{_FRIENDS}|guests|others|people|persons)"  # ... or merely how many ('me and 2 others')
_TWO = re.compile(rf"\b(?:me\s+and\s+my\s+{_COMPANION}|my\s+{_COMPANION}\s+and\s+(?:me|i|myself))\b", re.I)
# 'me, my wife and our son', 'my wife, my son and me': one for me and one for each companion named
_ME_AND_SEVERAL = re.compile(
    rf"\b(?:me|myself)(?P<rest>(?:\s*,\s*(?:my|our)\s+{_COMPANION})+\s*,?\s*(?:and|&)\s+(?:my|our)\s+{_COMPANION})\b"
    rf"|\b(?P<first>(?:my|our)\s+{_COMPANION}(?:\s*,\s*(?:my|our)\s+{_COMPANION})+)\s*,?\s*(?:and|&)\s+(?:me|myself|i)\b",
    re.I,
)
_COUNT = r"(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)"
# what follows an 'I' that starts a sentence of its own: 'I have 3 kids and I want a table for two'
_SAYS = (
    r"(?:want|need|would|will|am|have|had|was|like|wanna|'d|'m|’m|’d|do|did|can|could|should|must|plan|prefer|"
    r"think|hope|only|just|also)\b"
)
# 'me and 2 friends', 'me and my 3 kids', 'myself plus 3 colleagues', '2 friends and me': the number and me
_ME_AND_N = re.compile(
    rf"\b(?:(?:me|myself|i)\s*(?:and|plus|\+|&|with)\s+(?:my\s+|our\s+)?(?P<n>{_COUNT})\s+(?:other\s+)?{_COMPANIONS}"
    # '2 friends and me', never '3 people and I want to leave' or 'I have 3 kids and I want a table for two'
    rf"|(?P<m>{_COUNT})\s+(?:of\s+my\s+)?{_FRIENDS}\s+(?:and|&|plus)\s+(?:me|myself|i(?!\s*{_SAYS}))\b)(?!\w)",
    re.I,
)
_ADULTS_AND_CHILDREN = re.compile(
    rf"\b(?P<a>{_COUNT})\s+adults?\s+(?:and|with|\+|&)\s+(?P<c>{_COUNT})\s+(?:kids?|children|child|infants?)\b", re.I
)
_VALUES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def _value(word: str) -> int:
    return int(word) if word.isdigit() else _VALUES[word.lower()]


def people_said(text: str) -> list[tuple[int, tuple[int, int]]]:
    """(how many people, span) for each such phrase of `text`."""
    out = [(1, m.span()) for m in _ALONE.finditer(text)]
    several = [
        (len(re.findall(r"\b(?:my|our)\s", m["rest"] or m["first"], re.I)) + 1, m.span())
        for m in _ME_AND_SEVERAL.finditer(text)
    ]
    out += several + [(2, m.span()) for m in _TWO.finditer(text) if not _inside(m.span(), several)]
    out += [(_value(m["n"] or m["m"]) + 1, m.span()) for m in _ME_AND_N.finditer(text)]
    out += [(_value(m["a"]) + _value(m["c"]), m.span()) for m in _ADULTS_AND_CHILDREN.finditer(text)]
    return sorted(out, key=lambda found: found[1])


def _inside(span: tuple[int, int], found: list[tuple[int, tuple[int, int]]]) -> bool:
    return any(start <= span[0] and span[1] <= end for _, (start, end) in found)
