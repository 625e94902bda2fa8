"""Numbers in a question: digits, thousands separators, '$50k', '1.5 million', number words, ranges.

Each mention carries the cues around it ('over', 'top', 'between ... and', '$') so that the
assignment step can tell a salary threshold from a row limit or a year.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from .party_words import people_said
from .spelled import SCALE_VALUES, spelled_numbers
from .text import Span, after, before, stem, wordset

_DIGITS = re.compile(
    r"(?P<cur>[$€£])?\s?"
    r"(?<![\w.,/])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<mult>k|K|m|M|mn|bn|B|thousand|million|billion|grand)(?![\w]))?"
    r"(?![\w]|\.\d|,\d{3})"
)
_MULT = {
    "k": 1e3,
    "thousand": 1e3,
    "grand": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "million": 1e6,
    "bn": 1e9,
    "b": 1e9,
    "billion": 1e9,
}

# What a count counts, by the noun after it ('4 seats', 'two rooms'). Nouns of one group count the same thing
# (a party of 4 takes 4 seats). roles.py reads it too: a parameter named after one of these is a quantity.
_COUNTED_GROUPS = {
    "people": "people person guest adult traveler traveller passenger rider diner attendee party group pax seat "
    "ticket member us",
    "child": "child children kid infant",
    "room": "room",
    "bed": "bed bedroom",
    "bath": "bath bathroom",
    "bag": "bag suitcase luggage",
    "night": "night day",
    "star": "star",
}
COUNTED = {noun: group for group, nouns in _COUNTED_GROUPS.items() for noun in nouns.split()}
_OUT_OF = re.compile(r"^\s*(?:out\s+)?of\s+(?:\d+|[a-z]+)\s+([a-z]+)")  # 'four out of 6 stars'
_OF_US = re.compile(r"^\s*of\s+(us|them)\b")  # 'the two of us'
_WORDS_AFTER = re.compile(r"^\s*-?\s*((?:[a-z]+[\s-]+){0,3}[a-z]+)")  # up to four words: '2 one way flight tickets'
# words that end the noun phrase after a number: what comes after them is not what it counts
_PHRASE_ENDS = wordset("the a an at to for in on from with by and or but of is are was that which who will would")
_ONE_WAY = re.compile(r"^\s*-?\s*way\b")  # 'a one way ticket': no count
_LOOKING_FOR = re.compile(r"\b(?:look(?:ing)?|search(?:ing)?|ask(?:ing)?|hop(?:e|ing)|wait(?:ing)?)\s+for\s*$")
_PARTY_BEFORE = re.compile(
    r"\b(?:party|group|family|table|reservation|booking|seats?|tickets?|room)\s+(?:of|for)\s*$"
)  # 'party of seven', 'a family of four', 'a table for five'
_FOR_BEFORE = re.compile(r"\bfor\s*$")  # 'book it for 3 at 7 pm', 'dinner for two'
# after 'for N', a word other than these names what N counts ('for 3 hours'), so N is not a party size
_NOUN_AFTER_FOR = re.compile(
    r"^\s*(?!(?:at|on|in|to|tomorrow|today|tonight|this|next|please|and|from|by|around|for|heading|going|will)\b)"
    r"[a-z]"
)

_GT = re.compile(
    r"(?:more than|greater than|over|above|exceeding|exceeds?|in excess of|bigger than|larger than|"
    r"higher than|north of|upwards of|beyond|more expensive than|pricier than|costlier than|dearer than|>)\s*$"
)
_GTE = re.compile(r"(?:at least|minimum(?: of)?|min\.?|starting at|>=|≥|from)\s*$")
_LT = re.compile(
    r"(?:less than|fewer than|under|below|cheaper than|less expensive than|lower than|smaller than|beneath|<)\s*$"
)
_LTE = re.compile(r"(?:at most|up to|upto|maximum(?: of)?|max\.?|within|<=|≤)\s*$")
# a comparison denied is the other bound, inclusive: 'no more than 60' is at most 60, 'not under 5' at least 5
_NOT_ABOVE = re.compile(
    r"\b(?:(?:no|not)\s+(?:(?:more|greater|higher|bigger|larger)\s+than|over|above|exceeding)|"
    r"(?:does|do|did)\s*(?:not|n't)\s+exceed|not\s+to\s+exceed)\s*$"
)
_NOT_BELOW = re.compile(r"\b(?:no|not)\s+(?:(?:less|fewer|lower|smaller)\s+than|under|below)\s*$")
CURRENCY_WORD = r"(?:dollars?|usd|bucks|euros?|eur|pounds?|gbp)"  # after a number: '780 dollars', '50 bucks'
_MONEY_WORD = r"(?:\s*" + CURRENCY_WORD + r"\b)?"
_GTE_AFTER = re.compile(r"^" + _MONEY_WORD + r"\s*(?:\+|or more\b|and up\b|and above\b|or higher\b|plus\b|or above\b)")
_LTE_AFTER = re.compile(
    r"^" + _MONEY_WORD + r"\s*(?:or less\b|and under\b|and below\b|or lower\b|or cheaper\b|or under\b|max\b)"
)
_CURRENCY_AFTER = re.compile(r"^\s*" + CURRENCY_WORD + r"\b")
_TIME_UNIT_AFTER = re.compile(r"^\s*(?:days?|weeks?|months?|years?|quarters?|hours?|minutes?)\b")
_TOP_BEFORE = re.compile(
    r"(?:\btop|\bfirst|\bbest|\bbiggest|\blargest|\bhighest|\bworst|\bbottom|\bleading|"
    r"\blast|\blatest|\bnewest|\bmost recent|\blowest)\s*$"
)
_TOP_AFTER = re.compile(
    r"^\s*(?:best|biggest|largest|highest|most|top|worst|lowest|least|latest|newest|oldest|"
    r"most recent|recent|greatest|leading)\b"
)
_COUNT_BEFORE = re.compile(
    r"(?:\bshow(?: me)?|\blist|\bgive me|\bget(?: me)?|\breturn|\bdisplay|\bfetch|\bsee|"
    r"\bonly|\bjust|\blimit(?:ed)?(?: it)?(?: to)?|\bcap(?: it)? at|\bmax(?:imum)? of)"
    r"(?: the| our| my)?\s*$"
)
_COUNT_AFTER = re.compile(
    r"^\s*(?:results?|rows?|records?|entries|items|names|people|employees|staff|customers|"
    r"clients|accounts|products|orders|deals|sales|requests|persons|earners|rows)\b"
)
_ID_BEFORE = re.compile(r"(?:#|\bno\.?|\bnumber|\bnr\.?|\bid|\bref(?:erence)?)\s*$")


@dataclass
class NumberMention:
    value: float
    span: Span
    text: str
    is_integer: bool
    currency: bool = False
    multiplied: bool = False  # '50k', '1.5 million'
    from_words: bool = False
    cmp: str | None = None  # 'gt' | 'gte' | 'lt' | 'lte'
    range_role: str | None = None  # 'low' | 'high' for 'between 10 and 20'
    range_id: int | None = None
    top: bool = False  # 'top 10', '5 best'
    count_cue: bool = False  # 'show 20', '20 results'
    id_cue: bool = False  # '#42', 'number 4711'
    time_unit: bool = False  # '15 days'
    ordinal: bool = False  # '23rd', 'twenty third' (never 'first' or 'second': 'first 10', 'a second')
    counted: str | None = None  # what it counts, a COUNTED noun: 'seat' in '4 seats', 'party' in 'party of 7'
    for_cue: bool = False  # 'a table for five', 'book it for 3 at 7 pm': likely a number of people
    preceding: str = ""  # lower-cased text before the number
    money_end: int | None = None  # where the currency word after it ends: '780 dollars' (None: no such word)
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def reader(self) -> str:
        """The extractor a value read from it is reported by: 'number', or 'number_words' ('twenty five')."""
        return "number_words" if self.from_words else "number"

    @property
    def year_like(self) -> bool:
        return (
            self.is_integer
            and 1900 <= self.value <= 2100
            and not self.currency
            and not self.multiplied
            and "," not in self.text
            and not self.from_words
        )


def find_numbers(text: str) -> list[NumberMention]:
    """Every number in `text`, with its cues, in order of appearance."""
    dated = [m.span() for m in _DATE_LIKE.finditer(text)]
    found = [
        _from_digits(m)
        for m in _DIGITS.finditer(text)
        if not _glued_to_word(text, m.start("num")) and not any(s <= m.start("num") < e for s, e in dated)
    ]
    found += [_from_ordinal(m) for m in _DIGIT_ORDINAL.finditer(text)]
    taken = [m.span for m in found]
    found += [m for m in _from_words(text) if not any(s[0] < m.span[1] and m.span[0] < s[1] for s in taken)]
    found = _with_people(text, found)
    found.sort(key=lambda m: m.span)
    found = _split_between(text, found)
    for mention in found:
        _as_figures(text, mention)  # first: the cues are read around 'six figures', not around 'six'
        _add_cues(text, mention)
    _pair_ranges(text, found)
    return found


def _with_people(text: str, found: list[NumberMention]) -> list[NumberMention]:
    """`found` with the people said without one number (party_words.py) in place of the numbers inside them:
    '2 adults and 3 kids' is 5 people, not 2 and 3."""
    for value, (start, end) in people_said(text):
        found = [m for m in found if not (start <= m.span[0] and m.span[1] <= end)]
        said = text[start:end]
        found.append(NumberMention(value, (start, end), said, True, from_words=True, counted="party"))
    return found


_DATE_LIKE = re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b")


def _glued_to_word(text: str, start: int) -> bool:
    """'X-15' or 'USB-3' are names, not numbers; '50-100' is a range."""
    return start >= 2 and text[start - 1] == "-" and text[start - 2].isalpha()


def _from_digits(m: re.Match[str]) -> NumberMention:
    raw = m.group("num").replace(",", "")
    value = float(raw)
    mult = m.group("mult")
    if mult:
        value *= _MULT[mult.lower()]
    start = m.start("cur") if m.group("cur") else m.start("num")
    if _signed(m.string, start):  # 'more than -5' is -5, which the parameter's bounds then judge, not 5
        value, start = -value, start - 1
    return NumberMention(
        value=_tidy(value),
        span=(start, m.end()),
        text=m.string[start : m.end()].strip(),
        is_integer=float(_tidy(value)).is_integer(),
        currency=bool(m.group("cur")),
        multiplied=bool(mult),
    )


def _signed(text: str, start: int) -> bool:
    """A minus sign right before the number that starts a word: '-5', '(-5)'; not '50-100' or 'X-15'."""
    return start >= 1 and text[start - 1] in "-−" and (start == 1 or text[start - 2] in " \t(")


def _tidy(value: float) -> float:
    rounded = round(value, 6)
    return int(rounded) if float(rounded).is_integer() else rounded


_DIGIT_ORDINAL = re.compile(r"(?<![\w.,/])(?P<num>\d{1,3})(?:st|nd|rd|th)\b")
_WORD_ORDINALS_NOT_NUMBERS = frozenset({"first", "second"})  # 'the first 10', 'wait a second', 'second-hand'


def _from_ordinal(m: re.Match[str]) -> NumberMention:
    """'23rd', '4th': a position or a day of the month; read as its number, marked as an ordinal."""
    return NumberMention(value=int(m["num"]), span=m.span(), text=m.group(), is_integer=True, ordinal=True)


# thousands after a number in words: 'two hundred k', 'ninety grand' (digits take theirs in _DIGITS)
_THOUSANDS_AFTER = re.compile(r"\s?(?:k|grand)(?!\w)", re.IGNORECASE)


def _from_words(text: str) -> list[NumberMention]:
    """'twenty-five', 'a hundred', 'one hundred and fifty', 'a dozen', 'twenty third' (read by spelled.py);
    'two hundred k' and 'one fifty k' (a hundreds digit said before the tens: 150) are thousands."""
    out: list[NumberMention] = []
    spelled = spelled_numbers(text)
    for i, s in enumerate(spelled):
        if s.ordinal and s.text.lower() in _WORD_ORDINALS_NOT_NUMBERS:
            continue
        value, start, end = s.value, s.span[0], s.span[1]
        thousands = None if s.ordinal else _THOUSANDS_AFTER.match(text, end)
        if thousands is not None:
            unit = spelled[i - 1] if i else None
            if (  # a plain digit word, then tens: 'one fifty', 'one ten' (never 'first fifty')
                unit is not None
                and not unit.ordinal
                and 1 <= unit.value <= 9
                and 10 <= value <= 99
                and not text[unit.span[1] : start].strip()
            ):
                if out and out[-1].span == unit.span:
                    out.pop()
                value, start = unit.value * 100 + value, unit.span[0]  # 'one fifty k'
            value, end = value * 1000, thousands.end()
        elif s.text.lower() == "one" and not _counted_one(text, s.span):
            continue  # a bare 'one' is nearly always a pronoun: 'which one', 'no one'
        out.append(
            NumberMention(
                value=value,
                span=(start, end),
                text=text[start:end],
                is_integer=float(value).is_integer(),
                from_words=True,
                ordinal=s.ordinal,
                multiplied=thousands is not None,
            )
        )
    return out


def _counted_one(text: str, span: Span) -> bool:
    """'one person', 'one room', 'a table for one', 'party of one': a count, not a pronoun."""
    pre, post = before(text, span[0]), after(text, span[1])
    if _ONE_WAY.match(post) or _LOOKING_FOR.search(pre):
        return False  # 'a one way ticket', 'looking for one'
    return _counted(post) is not None or bool(_PARTY_BEFORE.search(pre)) or _for_people(pre, post)


def _for_people(pre: str, post: str) -> bool:
    """'dinner for two', 'book it for 3 at 7 pm': 'for N' with no noun after it counts people."""
    return bool(_FOR_BEFORE.search(pre)) and not _NOUN_AFTER_FOR.match(post)


def words_to_number(seq: list[str]) -> int | float | None:
    """['two', 'hundred', 'fifty'] -> 250; None when the words are not one number."""
    found = spelled_numbers(" ".join(seq))
    if len(found) != 1 or found[0].ordinal or found[0].span != (0, len(" ".join(seq))):
        return None
    return found[0].value


def _counted(post: str) -> str | None:
    """The COUNTED noun a number counts, from the words after it: '4 seats' -> 'seat', '2 one way flight
    tickets' -> 'ticket' (up to three words in between, none of them a preposition or an article), 'the two
    of us' -> 'us', 'four out of 6 stars' -> 'star', 'a 3-star hotel' -> 'star'."""
    if (m := _OF_US.match(post) or _OUT_OF.match(post)) is not None:
        return stem(m[1]) if stem(m[1]) in COUNTED else None
    if (m := _WORDS_AFTER.match(post)) is None:
        return None
    for word in re.split(r"[\s-]+", m[1]):
        if word in _PHRASE_ENDS:
            return None
        if stem(word) in COUNTED:
            return stem(word)
    return None


def _add_cues(text: str, m: NumberMention) -> None:
    pre, post = before(text, m.span[0]), after(text, m.span[1])
    m.preceding = pre
    m.time_unit = bool(_TIME_UNIT_AFTER.match(post))
    if money := _CURRENCY_AFTER.match(post):
        m.currency = True
        m.money_end = m.span[1] + money.end()
    if _NOT_ABOVE.search(pre):
        m.cmp = "lte"
    elif _NOT_BELOW.search(pre):
        m.cmp = "gte"
    elif _GT.search(pre):
        m.cmp = "gt"
    elif _LT.search(pre):
        m.cmp = "lt"
    elif _LTE.search(pre):
        m.cmp = "lte"
    elif _GTE.search(pre) or _GTE_AFTER.match(post):
        m.cmp = "gte"
    elif _LTE_AFTER.match(post):
        m.cmp = "lte"
    if not m.time_unit:
        m.top = bool(_TOP_BEFORE.search(pre) or _TOP_AFTER.match(post))
        m.count_cue = bool(_COUNT_BEFORE.search(pre) or _COUNT_AFTER.match(post))
    m.id_cue = bool(_ID_BEFORE.search(pre))
    if not (m.currency or m.ordinal or (m.value == 1 and _ONE_WAY.match(post))):
        m.counted = m.counted or _counted(post) or ("party" if _PARTY_BEFORE.search(pre) else None)
        m.for_cue = m.counted is None and _for_people(pre, post)


_BETWEEN = re.compile(r"^\s*(?:and|to|-|–|through|thru|until)\s*$")


def _shared_scale(low: NumberMention, high: NumberMention) -> float | None:
    """The scale the high end names for both ('between 80 and 90 thousand', 'between eighty and ninety
    thousand', '50-100k'), when the low end names none and would be far below it."""
    if low.multiplied or low.value * 1000 > high.value:
        return None
    if high.multiplied:
        return high.value / float(re.sub(r"[^\d.]", "", high.text.split()[0]) or 1)
    said = high.text.lower().split()
    if high.from_words and said[-1] in SCALE_VALUES and not SCALE_VALUES.keys() & set(low.text.lower().split()):
        return SCALE_VALUES[said[-1]]
    return None


_FIGURES_AFTER = re.compile(r"[\s-]+figures?\b", re.IGNORECASE)


def _as_figures(text: str, m: NumberMention) -> None:
    """'earns six figures', '7 figures': an amount of that many digits, at least 10^(n-1) ('six figures' is
    100,000 or more), never the count itself."""
    after = _FIGURES_AFTER.match(text, m.span[1])
    if after is None or not (m.is_integer and 4 <= m.value <= 10) or m.multiplied:
        return
    m.value, m.multiplied = 10 ** (int(m.value) - 1), True
    m.span, m.text = (m.span[0], after.end()), text[m.span[0] : after.end()]


def _split_between(text: str, found: list[NumberMention]) -> list[NumberMention]:
    """Number words after 'between' read as one number across the range's 'and' ('eighty thousand and ninety',
    then a stray 'thousand'; 'fifteen hundred and three', then 'thousand'): the two ends, when both sides
    are numbers and the first is the smaller ('one hundred and five' alone stays 105)."""
    out: list[NumberMention] = []
    i = 0
    while i < len(found):
        m, nxt = found[i], found[i + 1] if i + 1 < len(found) else None
        end = nxt.span[1] if nxt is not None and nxt.from_words and not text[m.span[1] : nxt.span[0]].strip() else None
        ends = (
            _range_ends(text, m.span[0], end or m.span[1])
            if m.from_words and " and " in m.text.lower() and re.search(r"\bbetween\s*$", before(text, m.span[0], 20))
            else None
        )
        if ends is None:
            out.append(m)
            i += 1
            continue
        out += ends
        i += 2 if end is not None else 1
    return out


def _range_ends(text: str, start: int, end: int) -> list[NumberMention] | None:
    """The two ends of number words joined by 'and' ('eighty thousand and ninety thousand'), or None."""
    whole = text[start:end]
    cuts = list(re.finditer(r"\s+and\s+", whole, re.IGNORECASE))
    for cut in reversed(cuts):  # the last first: the low end may have its own 'and' ('one hundred and five')
        left, right = whole[: cut.start()], whole[cut.end() :]
        low, high = words_to_number([left.lower()]), words_to_number([right.lower()])
        if low is not None and high is not None and low < high:
            return [
                NumberMention(low, (start, start + cut.start()), left, float(low).is_integer(), from_words=True),
                NumberMention(high, (start + cut.end(), end), right, float(high).is_integer(), from_words=True),
            ]
    return None


def _pair_ranges(text: str, found: list[NumberMention]) -> None:
    """'between 10 and 20', 'from 500 to 1000', '$200-$500', '50-100k': mark the low and the high end (the
    smaller number, also when said second: 'between 500 and 100')."""
    for rid, (low, high) in enumerate(itertools.pairwise(found)):
        gap = text[low.span[1] : high.span[0]]
        if not _BETWEEN.match(gap) or low.range_role or low.time_unit:
            continue
        connector = gap.strip()
        pre = before(text, low.span[0], 20)
        if connector == "and" and not re.search(r"between\s*$", pre):
            continue
        if connector == "until" and not re.search(r"from\s*$", pre):
            continue
        if factor := _shared_scale(low, high):
            low.value = _tidy(low.value * factor)
            low.multiplied = True
        if low.value > high.value and connector in ("and", "to"):  # 'between 500 and 100': the ends, said backwards
            low, high = high, low
        low.range_role, high.range_role = "low", "high"
        low.range_id = high.range_id = rid
        low.cmp, high.cmp = "gte", "lte"
        low.currency = high.currency = low.currency or high.currency
