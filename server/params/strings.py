"""Free-text values: quoted strings, emails, pattern matches, and proper names.

Proper names are runs of capitalised words (digits and model numbers allowed inside, so
'Aero 15 Pro' and 'USB-C Docking Station' stay whole), minus the question words a sentence
starts with. Lower-case names are taken only after a cue such as 'called' or 'named'.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from .text import COURTESY, PRONOUNS, Span, Word, starts_sentence, words, wordset

_QUOTED = re.compile(r'"([^"]{1,200})"|“([^”]{1,200})”|‘([^’]{1,200})’|(?<![\w])\'([^\']{1,200})\'(?![\w])')
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?![\w])")

# Capitalised words that start questions and commands, or are otherwise never part of a name.
_NOT_NAMES = wordset("""
what who whom whose which where when why how show list find give get tell can could would will should do does did
is are was were please i i'm i'd me my we our us you your the a an any all each every look lookup search display
fetch pull return name names let let's hey hi hello okay ok employee employees staff customer customers product
products order orders sales revenue total count number how's what's who's where's which's compare between and or
in on at of for from to by with about since after before during until this that these those there here
yes no not help hmm hmmm um uh oh well also just i'll i've we'd we're we'll you'd maybe sure thanks thank
one two three four five six seven eight nine ten
check try book send transfer play reserve rent buy pick choose select grab tell ask
anyone anybody everyone everybody someone somebody nobody nothing
""")
# a sentence's first word that is a pronoun or an adverb when a lower-case word or a comma follows ('It should
# be on the 7th', 'Preferably, a place with live music'); 'It Follows', 'They Might Be Giants' stay names
_OPENERS = wordset("it they he she preferably ideally hopefully actually basically honestly personally otherwise")
# the pronoun, which a name never runs into
_I = wordset("i i'd i'm i'll i've")
# a sentence's first word that says how the last answer went, when a comma or 'I' follows ('Great, I want',
# 'Yeah I'd like'); 'Great Wall' is still a name
_INTERJECTIONS = wordset("yeah yep yup nope great cool perfect awesome alright sure excellent wow")
# a title before a name is not part of it: 'Dr Elena Petrova', 'Mr. Robert Kline', 'our CEO Catherine Holloway'
_TITLES = wordset("mr mrs ms miss mx dr prof professor sir dame ceo cfo cto coo")
# words that start the next sentence after a capital letter's dot ('... Plan B. Then ...'), not a surname
_SENTENCE_STARTS = wordset("then so but if it he she they there also now next after later thanks")
_MONTH_DAY = wordset("""january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday
today yesterday tomorrow q1 q2 q3 q4 fy ytd""")
_PLACE_KINDS = wordset("valley beach springs heights creek hills island bay")  # not "city": 'Boston city'
# what may follow a place's name: punctuation, the end, or a linking or time word ('Mill valley tomorrow'); not
# a noun ('Miami beach house', 'Tampa bay area')
_AFTER_A_PLACE = wordset(
    "on at in for to from and or but with by please thanks so then this next tomorrow today tonight"
)
# what may follow a shop's name ending in 's where it ends the request ("Dickey's tonight", "Denny's please")
_AFTER_A_SHOP = wordset("tonight today tomorrow please thanks")
_CONNECTORS = wordset("of and & de del la le van von der da di du y")
_SUFFIX_DOT = re.compile(r"\.(?=\s|$|[?!,])")
_CUES = re.compile(
    r"\b(?:called|named|name is|by the name of|for|of|about|is|find|look up|lookup|search for|"
    r"to|from|with|customer|client|employee|manager|product)\s+$",
    re.I,
)
_LOWER_CUES = re.compile(
    r"\b(?:called|named|by the name of|look up|lookup|find|search for|reports? to|"
    r"managed by|reviews? (?:of|for)|history (?:of|for)|details (?:of|for)|"
    r"email (?:of|for)|(?:customer|client|employee|manager|product)(?: called| named)?)\s+$",
    re.I,
)
# 'who is priya raman': a person named after asking who, in two words or more ('who is available' names nobody)
_WHO_IS = re.compile(r"\bwho(?:'s|s|\s+is|\s+was)\s+$", re.I)
_LOWER_STOP = (
    wordset("""in on at for from to by with about since after before during until and or but the a an
is are was were this that these those what who which where when how please our my your
's email emails address phone contact details review reviews history orders order sales team department
manager reports report did do does has have had sell sold selling been called named""")
    | PRONOUNS
    | COURTESY
)


@dataclass
class TextMatch:
    value: str
    span: Span
    extractor: str  # quoted | email | pattern | proper_name | cued_name
    score: float


def find_quoted(question: str) -> list[TextMatch]:
    out = []
    for m in _QUOTED.finditer(question):
        group = next(i for i in range(1, 5) if m.group(i) is not None)
        out.append(TextMatch(m.group(group).strip(), m.span(group), "quoted", 0.98))
    return [t for t in out if t.value]


def find_emails(question: str) -> list[TextMatch]:
    return [TextMatch(m.group(), m.span(), "email", 0.9) for m in _EMAIL.finditer(question)]


def find_pattern(question: str, pattern: str) -> list[TextMatch]:
    """Substrings that fully match the parameter's pattern (anchors dropped for the search)."""
    loose = pattern
    if loose.startswith("^"):
        loose = loose[1:]
    if loose.endswith("$") and not loose.endswith("\\$"):
        loose = loose[:-1]
    try:
        finder = re.compile(rf"(?<![\w-])(?:{loose})(?![\w-])")
    except re.error:
        return []
    out = []
    for m in finder.finditer(question):
        if m.group() and re.fullmatch(pattern, m.group()):
            out.append(TextMatch(m.group(), m.span(), "pattern", 0.95))
    return out


_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$", re.I)


def _is_name_word(w: Word) -> bool:
    first = w.text[0]
    return (
        (first.isupper() or (any(c.isdigit() for c in w.text) and any(c.isalpha() for c in w.text)))
        and w.lower not in _MONTH_DAY
        and not _ORDINAL.match(w.text)  # '7th', '12th' are days, not names
    )


def may_be_in_a_name(w: Word) -> bool:
    """A capitalised word of letters that can be part of a name (`_is_name_word`): not a word that opens
    questions and commands ('Show', 'Orders'), nor a courtesy word, nor letters mixed with digits ('Q3')."""
    letters = w.text.replace("'", "").replace("-", "").isalpha()
    return letters and _is_name_word(w) and w.lower not in _NOT_NAMES and w.lower not in COURTESY


_COMPASS_BEFORE = re.compile(r"\b(?:New|North|South|East|West)\s+$")
_COMPASS = wordset("north south east west")
_NAME_AFTER = re.compile(r" +([A-Z][\w'-]*)")


def in_a_longer_place(question: str, span: Span, ordinary: frozenset[str] = frozenset()) -> bool:
    """A capitalised value that is part of another place's name: right after a capitalised New, North, South,
    East or West ('New Mexico', 'North Korea', 'West Virginia'), or ending in a capitalised North, South, East
    or West right before a word that may be in a name and is no ordinary word of the template ('South Africa',
    'the North Carolina office'; not 'the West Region', 'the South please'). A question that capitalises most
    of its words says nothing by a capital ('How Many Customers North Vs South'): there only the first holds.
    A longer listed value that holds both words matches on its own ('South Korea'). Only spaces may part the
    two words."""
    value = words(question[span[0] : span[1]])
    if not value:
        return False
    if value[0].text[:1].isupper() and _COMPASS_BEFORE.search(question, 0, span[0]) is not None:
        return True
    last, after = value[-1], _NAME_AFTER.match(question, span[1])
    if not last.text[:1].isupper() or last.lower not in _COMPASS or after is None or _title_case(question):
        return False
    word = Word(after.group(1), after.start(1), after.end(1))
    return may_be_in_a_name(word) and word.lower not in ordinary


def _title_case(question: str) -> bool:
    """Most of the question's words (three or more) begin with a capital."""
    found = [w for w in words(question) if w.text[:1].isalpha()]
    return len(found) >= 3 and sum(w.text[:1].isupper() for w in found) * 5 >= len(found) * 3


def _pronoun_i(toks: list[Word], j: int) -> bool:
    """Word j is the pronoun: 'I'd', 'I'm', or 'I' before a lower-case word ('Philip I want'); not the 'I' of
    'World War I Museum' or 'Elizabeth I please'."""
    word = toks[j]
    if word.lower in _I and word.lower != "i":
        return True
    following = toks[j + 1] if j + 1 < len(toks) else None
    return word.text == "I" and following is not None and following.text.islower() and following.lower not in COURTESY


def _opener(question: str, toks: list[Word], i: int) -> bool:
    """Word i opens a sentence, written 'It' or 'Preferably', and a comma or a lower-case word follows."""
    w = toks[i]
    if w.lower not in _OPENERS or not w.text[1:].islower() or not starts_sentence(question, w.start):
        return False
    return question[w.end : w.end + 1] == "," or (i + 1 < len(toks) and toks[i + 1].text[:1].islower())


def _interjection(question: str, toks: list[Word], i: int) -> bool:
    """Word i opens a sentence and is an interjection (above), followed by punctuation or 'I'."""
    w = toks[i]
    if w.lower not in _INTERJECTIONS or (i > 0 and not question[: w.start].rstrip().endswith((".", "!", "?"))):
        return False
    after = question[w.end : w.end + 1]
    return after in (",", ".", "!", "") or (i + 1 < len(toks) and toks[i + 1].lower in _I)


def _ends_here(question: str, toks: list[Word], j: int) -> bool:
    """Word j closes the sentence or the phrase: nothing, punctuation or a linking word after it."""
    if j + 1 == len(toks):
        return True
    return bool(question[toks[j].end : toks[j + 1].start].strip()) or toks[j + 1].lower in _AFTER_A_PLACE


def find_proper_names(question: str) -> list[TextMatch]:
    """Runs of capitalised words; 'Marcus Webb's' gives 'Marcus Webb'."""
    toks = words(question)
    out: list[TextMatch] = []
    i = 0
    while i < len(toks):
        w = toks[i]
        if (
            not _is_name_word(w)
            or w.lower in _NOT_NAMES | _TITLES
            or w.lower in COURTESY
            or w.text.isdigit()
            or w.text == "I"
            or _interjection(question, toks, i)
            or _opener(question, toks, i)
        ):
            i += 1
            continue
        j = i + 1
        while j < len(toks):
            gap = question[toks[j - 1].end : toks[j].start]
            initial = gap.strip() == "." and len(toks[j - 1].text) == 1 and toks[j - 1].text.isupper()
            after_initial = initial and _is_name_word(toks[j]) and toks[j].lower not in _NOT_NAMES | _SENTENCE_STARTS
            if gap.strip() not in ("", "-", "&", "'") and not after_initial:
                break  # a middle initial's dot joins the name: 'Taraji P. Henson', 'J. K. Rowling'
            nxt = toks[j]
            if nxt.lower in COURTESY or _pronoun_i(toks, j):
                break  # 'To Philip I want to send', 'Yeah I'd like'; 'World War I Museum', 'Elizabeth I'

            if (
                _is_name_word(nxt)
                or (nxt.text.isdigit() and len(nxt.text) <= 3)
                or (nxt.text.isupper() and len(nxt.text) > 1)
            ):
                j += 1
            elif nxt.lower in _PLACE_KINDS and gap == " " and _ends_here(question, toks, j):
                j += 1  # 'Mill valley', 'Palm springs': a place's kind written in lower case ends its name
                break
            elif nxt.lower in _CONNECTORS and j + 1 < len(toks) and _is_name_word(toks[j + 1]):
                if toks[j + 1].lower in _I:
                    break  # 'Celine Dion and I', 'San Diego and I'm': the speaker, never a name's second half
                j += 2
            else:
                break
        start, end = w.start, toks[j - 1].end
        value = question[start:end]
        if _SUFFIX_DOT.match(question, end) and value.split()[-1].lower() in ("inc", "ltd", "co", "corp", "jr", "sr"):
            end += 1
            value += "."
        value, end = _strip_possessive(question, value, end)
        score = 0.8 if _CUES.search(question[:start]) else 0.72
        if i == 0 or question[:start].strip().endswith((".", "?", "!")):
            score -= 0.05  # a capital at the start of a sentence says less
        out.append(TextMatch(value, (start, end), "proper_name", score))
        i = j
    return out + _matches(question, out)


_VERSUS = re.compile(r"\s+(?:vs\.?|versus|v\.)\s+", re.I)


def _matches(question: str, names: list[TextMatch]) -> list[TextMatch]:
    """Two names set against each other, as one more name a little below both ('Eagles vs Cowboys' for an
    event; 'Tesla' and 'Ford' of 'Tesla vs Ford' stay the surer readings for a company)."""
    out = []
    for a, b in itertools.pairwise(names):
        if _VERSUS.fullmatch(question[a.span[1] : b.span[0]]):
            span = (a.span[0], b.span[1])
            out.append(TextMatch(question[span[0] : span[1]], span, "proper_name", min(a.score, b.score) - 0.02))
    return out


def find_cued_names(question: str) -> list[TextMatch]:
    """Lower-case names after a cue: 'look up priya raman', 'orders from acme corp'."""
    toks = words(question)
    out = []
    for i, w in enumerate(toks):
        cued = _LOWER_CUES.search(question[: w.start]) is not None
        if not (cued or _WHO_IS.search(question[: w.start])) or w.lower in _LOWER_STOP or w.lower in _NOT_NAMES:
            continue
        j = i
        while j < len(toks) and toks[j].lower not in _LOWER_STOP and toks[j].lower not in _MONTH_DAY and j - i < 5:
            if j > i and question[toks[j - 1].end : toks[j].start].strip() not in ("", "-", "&"):
                break
            j += 1
        if j == i or (not cued and j - i < 2):
            continue
        value, end = _strip_possessive(question, question[w.start : toks[j - 1].end], toks[j - 1].end)
        if value and not value.isdigit():
            out.append(TextMatch(value, (w.start, end), "cued_name", 0.62))
    return out


_TAIL_CUE = re.compile(r"\b(?:of|for|by|from)\s+$", re.I)


def find_tail_names(question: str) -> list[TextMatch]:
    """A lower-case name closing the question after 'of/for/by/from': 'past ratings of aisha martin' (and
    'for priya raman pls': courtesy closes no name)."""
    toks = words(question)
    while toks and toks[-1].lower in COURTESY:
        toks.pop()
    out = []
    for i, w in enumerate(toks):
        rest = toks[i:]
        if not _TAIL_CUE.search(question[: w.start]) or not 1 <= len(rest) <= 3:
            continue
        if any(
            t.lower in _LOWER_STOP or t.lower in _NOT_NAMES or t.lower in _MONTH_DAY or t.text.isdigit() for t in rest
        ):
            continue
        if any(w.lower not in COURTESY for w in words(question[rest[-1].end :])) or any(
            question[a.end : b.start].strip() not in ("", "-") for a, b in itertools.pairwise(rest)
        ):
            continue
        value, end = _strip_possessive(question, question[w.start : rest[-1].end], rest[-1].end)
        out.append(TextMatch(value, (w.start, end), "tail_name", 0.58))
        break
    return out


# what a person's possessive in lower case is not: a period's ('last year's revenue', 'this week's orders')
_PERIOD_WORDS = wordset("year years month months week weeks quarter quarters day days weekend tonight")
# before a name in the possessive: a word that asks or links; not a determiner, which says a description
# follows ('the vip client's orders', 'our biggest client's orders', 'the senior engineer's reviews')
_DETERMINERS = wordset("the a an our my your their his her its this that these those each every any some all no")
_BEFORE_AN_OWNER = (_LOWER_STOP | _NOT_NAMES | wordset("want need like see pull bring about")) - _DETERMINERS


def find_owner_names(question: str) -> list[TextMatch]:
    """A name of two words in lower case, in the possessive of the word after it, at the start of the question or
    after a word that asks ('emma brown's reviews', 'what were emma brown's ratings'); not a period's ('last
    year's revenue') nor a kind of thing ('the sales team's budget')."""
    toks = words(question)
    out = []
    for i in range(len(toks) - 2):
        first, last, after = toks[i], toks[i + 1], toks[i + 2]
        if not last.text.endswith(("'s", "’s")) or not (first.text.islower() and last.text.islower()):
            continue
        owner = last.lower[:-2]
        pair = (first.lower, owner)
        if any(w in _LOWER_STOP or w in _NOT_NAMES or w in _MONTH_DAY or w in _PERIOD_WORDS for w in pair):
            continue
        if not all(w.isalpha() for w in pair) or not after.text.isalpha():
            continue
        if question[first.end : last.start] != " " or (i > 0 and toks[i - 1].lower not in _BEFORE_AN_OWNER):
            continue  # 'last year's', 'new customer's': the word before must ask or link, not describe
        end = last.end - 2
        out.append(TextMatch(question[first.start : end], (first.start, end), "cued_name", 0.58))
    return out


def _strip_possessive(question: str, value: str, end: int) -> tuple[str, int]:
    """'Marcus Webb's reviews' gives 'Marcus Webb'; a one-word name's own 's, at the end of the request, stays
    ('a table at Dickey's', "Dickey's tonight"): a shop's name. A person's ('find Priya Raman's', "Marcus
    Webb's next review", "Jane's on leave") is cut."""
    after = words(question[end:])
    if " " not in value.strip() and (
        not after or question[end : end + after[0].start].strip() or after[0].lower in _AFTER_A_SHOP
    ):
        return value, end
    for suffix in ("'s", "’s"):
        if value.endswith(suffix):
            return value[: -len(suffix)], end - len(suffix)
    if value.endswith(("'", "’")):
        return value[:-1], end - 1
    return value, end
