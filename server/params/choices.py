"""Match a question against a closed list of phrases: allowed values, aliases, values_from lists.

Exact whole-word matches first (case-insensitive, singular/plural tolerant), then distinctive
words of long stored values ('Orion' -> 'Orion Data Systems'), then rapidfuzz similarity over
word windows for misspellings, never below the configured score floor.

Everyday words written in capitals ('US', 'IT', 'IN') are the one case rule: as an operator wrote
them (allowed_values, aliases) they match only in capitals; listed by a values_from query (a value
or a code) they also match in other cases, but only as a weak guess (GUESS_SCORE): it fills a
required parameter when nothing stronger does, never an optional one (candidates.py), and never
from a word the template's examples use as an ordinary word ('tell us about ...').

A phrase list is prepared once (PhraseIndex) and then matched against many questions: the cost of a
question follows its own words, not the length of the list (a values_from list can hold 50,000).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

from .known_words import known_words
from .strings import in_a_longer_place, may_be_in_a_name
from .text import Span, Word, inside, starts_sentence, stem, words, wordset
from .value_list import ValueList

# Everyday words: written in capitals as a value or code ('US', 'IT', 'AND' for Andorra), case says which
# is meant. Function words only: a capitalised 'NEW' or 'ALL' is as likely meant in lower case.
_COMMON_WORDS = wordset(
    "us it in on at as no so am me we be do go up or an is of to by my oh ok id hi he "
    "and are can the for not but nor you was has had her his its our who why how per"
)
_FUNCTION_WORDS = _COMMON_WORDS | {"a"}  # never the word a misspelling rests on
# Words that identify nothing in a stored name.
_GENERIC = wordset(
    "the a an of and & inc inc. ltd ltd. llc co co. corp corp. corporation company group plc "
    "gmbh ag sa studio studios services solutions systems team department dept"
)
# a place's kind: alone it names no listed place ('city' of 'this city' is no 'New York City'); beside another
# word it may ('Kansas City' beside 'Kansas Jayhawks', 'Ohio State' beside 'Ohio University')
_KINDS = wordset("city town county village area district region state")
_LISTED = frozenset({"values_from", "values_from_alias"})  # phrases a values_from query listed
GUESS_SCORE = 0.5  # an everyday-word value or code from a list, found in another case than listed


@dataclass(frozen=True)
class Phrase:
    text: str
    value: Any  # the canonical value it stands for
    source: str  # "allowed_values" | "alias" | "values_from" | "values_from_alias" (a list's second column)


@dataclass
class ChoiceMatch:
    value: Any
    span: Span
    text: str
    extractor: str  # allowed_values | alias | values_from | values_from_alias | fuzzy | partial_name
    score: float  # 0..1
    guess: bool = False  # an everyday word read as a listed value or code (GUESS_SCORE)


@dataclass(frozen=True)
class ChoiceRules:
    """How one parameter's phrases may match a question (its template's and its own settings)."""

    floor: float = 85.0  # rapidfuzz ratio (0-100) a misspelling must reach
    fuzzy: bool = True  # `match: fuzzy`; `exact` turns misspellings off
    partial: bool = True  # distinctive words of long listed names
    ordinary: frozenset[str] = frozenset()  # lower-cased words the template's examples use as ordinary words


EXACT_ONLY = ChoiceRules(floor=100.0, fuzzy=False, partial=False)


def phrases_for(allowed: list[Any] | None, aliases: dict[str, Any], stored: ValueList | None = None) -> list[Phrase]:
    """Every (text, canonical value, source) a parameter's value may be written as: the one place that
    lists them (the deterministic matcher and the learned extractor both read it)."""
    out = [Phrase(str(v), v, "allowed_values") for v in allowed or []]
    canon = {str(v).casefold(): v for v in allowed or []}
    out += [Phrase(a, canon.get(str(v).casefold(), v), "alias") for a, v in aliases.items()]
    if stored is not None:
        out += [Phrase(str(v), v, "values_from") for v in stored.values if str(v).strip()]
        out += [Phrase(a, v, "values_from_alias") for a, v in stored.aliases]
    return out


def find_choices(question: str, phrases: PhraseIndex | list[Phrase], rules: ChoiceRules) -> list[ChoiceMatch]:
    """All matches, best first; a span is reported once, by its best phrase."""
    index = phrases if isinstance(phrases, PhraseIndex) else PhraseIndex(phrases)
    toks = words(question)
    matches = index.exact(question, toks, rules.ordinary)
    if rules.fuzzy:
        matches += index.fuzzy(question, toks, rules.floor, rules.ordinary)
    matches = [m for m in matches if not in_a_longer_place(question, m.span, rules.ordinary)]  # whole or misspelt
    if rules.partial:
        matches += index.partial_names(question, toks, rules.ordinary)
    matches.sort(key=lambda m: (-m.score, -(m.span[1] - m.span[0]), m.span[0]))
    kept: list[ChoiceMatch] = []
    for m in matches:
        if not any(
            k.span[0] < m.span[1] and m.span[0] < k.span[1] and k.value != m.value and k.score >= m.score for k in kept
        ) and not any(k.span == m.span for k in kept):
            kept.append(m)
    return kept


def _case_sensitive(phrase: str) -> bool:
    return phrase.isupper() and phrase.lower() in _COMMON_WORDS


def _key(word: str) -> str:
    """A word as the index files it: without accents, case folded (a superset of what the regex's
    IGNORECASE treats as equal, so the index never hides a match the regex would find)."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _question_keys(toks: list[Word]) -> set[str]:
    """Keys of the question's words and of their hyphen/apostrophe parts ('Coca' in 'Coca-Cola')."""
    keys = set()
    for t in toks:
        keys.add(_key(t.text))
        parts = re.split(r"([-'’])", t.text)
        if len(parts) > 1:
            pieces = parts[::2]
            seps = parts[1::2]
            for i in range(len(pieces)):
                run = pieces[i]
                keys.add(_key(run))
                for j in range(i + 1, len(pieces)):
                    run += seps[j - 1] + pieces[j]
                    keys.add(_key(run))
    return keys


def _occurrences(p: Phrase, question: str, lowered: str | None) -> Iterable[Span]:
    """Where the phrase stands in the question as whole words. Operator-written everyday words
    ('US') match in their own case only; everything else in any case. ASCII on both sides is a plain
    search (lower() keeps offsets there); otherwise the regex, whose IGNORECASE knows Unicode."""
    ignore_case = p.source in _LISTED or not _case_sensitive(p.text)
    if lowered is None or not p.text.isascii():
        return [m.span() for m in _pattern(p.text, ignore_case).finditer(question)]
    haystack, needle = (lowered, p.text.lower()) if ignore_case else (question, p.text)
    out = []
    at = haystack.find(needle)
    while at >= 0 and needle:
        end = at + len(needle)
        alone = (at == 0 or not _is_word_char(question[at - 1])) and (
            end == len(question) or not _is_word_char(question[end])
        )
        if alone:
            out.append((at, end))
            at = haystack.find(needle, end)  # like finditer: matches do not overlap
        else:
            at = haystack.find(needle, at + 1)
    return out


def _is_word_char(c: str) -> bool:
    """What the regex's \\w means."""
    return c.isalnum() or c == "_"


@lru_cache(maxsize=8192)
def _pattern(text: str, ignore_case: bool) -> re.Pattern[str]:
    """A phrase's whole-word pattern (non-ASCII text), compiled when the index first names it as a candidate."""
    return re.compile(rf"(?<![\w]){re.escape(text)}(?![\w])", re.IGNORECASE if ignore_case else 0)


def _in_another_name(
    question: str, toks: list[Word], k: int, value: Any, ordinary: frozenset[str], last: int | None = None
) -> bool:
    """Word k (words k to `last`) is part of a capitalised name the value does not hold: 'San' of 'from San
    Diego' does not name 'San Francisco', nor 'Art' of 'the National Gallery of Modern Art' name 'Cartoon Art
    Museum'. A neighbour counts when only spaces part them and it may be part of a name (strings.py
    `may_be_in_a_name`: not 'Show', 'Orders', 'March', 'Please' or 'Q3'), is not 'I', not an ordinary word of
    the template's examples and not a sentence's first word ('Tesla orders this year' still names 'Tesla
    Inc.'). Only for distinctive words: a whole value beside a capital is in title-case questions and 'Chicago
    Illinois' too often to tell from another name (`in_a_longer_place` is the one case taken)."""
    own = {w.lower for w in words(str(value))}
    last = k if last is None else last
    for j in (k - 1, last + 1):
        if not 0 <= j < len(toks):
            continue
        first, second = (toks[j], toks[k]) if j < k else (toks[last], toks[j])
        if question[first.end : second.start].strip() or not may_be_in_a_name(toks[j]):
            continue
        if toks[j].text == "I" or toks[j].lower in own | ordinary or starts_sentence(question, toks[j].start):
            continue
        return True
    return False


_VERSUS = wordset("vs vs. v v. versus against")


class PhraseIndex:
    """A parameter's phrases prepared for matching: built once per list, then read by every question."""

    def __init__(self, phrases: Iterable[Phrase]) -> None:
        self.phrases = list(phrases)
        self._by_first: dict[str, list[int]] = defaultdict(list)  # key of a phrase's first word -> phrases
        self._scan: list[int] = []  # phrases without a word the index can file: always tried
        self._by_stems: dict[int, dict[tuple[str, ...], list[int]]] = defaultdict(lambda: defaultdict(list))
        self._fuzzy: dict[int, tuple[list[int], list[str]]] = {}  # words in phrase -> (phrases, lower texts)
        owners: dict[str, set[Any]] = defaultdict(set)
        pair_owners: dict[tuple[str, str], set[Any]] = defaultdict(set)
        for i, p in enumerate(self.phrases):
            ws = words(p.text)
            (self._by_first[_key(ws[0].text)] if ws else self._scan).append(i)
            if ws and not _case_sensitive(p.text):
                self._by_stems[len(ws)][tuple(stem(w.text) for w in ws)].append(i)
                if len(p.text) >= 4:
                    self._fuzzy.setdefault(len(ws), ([], []))
                    self._fuzzy[len(ws)][0].append(i)
                    self._fuzzy[len(ws)][1].append(p.text.lower())
            if p.source == "values_from":
                for w in ws:
                    if w.lower not in _GENERIC | _KINDS and len(w.text) >= 3 and not w.text.isdigit():
                        owners[w.lower].add(p.value)
                for a, b in itertools.pairwise(ws):
                    if a.lower not in _GENERIC and b.lower not in _GENERIC:
                        pair_owners[(a.lower, b.lower)].add(p.value)
        # a word names a value only when no other value has it ('stonegate' in two names names neither); so do
        # two words in a row ('wireless mouse' names 'Wireless Mouse M2' beside 'Slim Wireless Keyboard' and
        # 'Ergo Vertical Mouse', where each word alone names two)
        self._distinctive = {w: next(iter(vs)) for w, vs in owners.items() if len(vs) == 1}
        self._distinctive_pairs = {
            pair: next(iter(vs))
            for pair, vs in pair_owners.items()
            if len(vs) == 1 and not (pair[0] in self._distinctive or pair[1] in self._distinctive)
        }

    # --- exact ---------------------------------------------------------------------------------
    def exact(self, question: str, toks: list[Word], ordinary: frozenset[str]) -> list[ChoiceMatch]:
        """Whole-phrase matches (0.97, aliases 0.96), else the same words singular or plural (0.93)."""
        out: list[ChoiceMatch] = []
        hit: set[int] = set()
        lowered = question.lower() if question.isascii() else None
        candidates = [i for k in _question_keys(toks) for i in self._by_first.get(k, ())] + self._scan
        for i in candidates:
            p = self.phrases[i]
            for span in _occurrences(p, question, lowered):
                hit.add(i)
                text = question[span[0] : span[1]]
                if text == p.text or not _case_sensitive(p.text):
                    score = 0.96 if p.source in ("alias", "values_from_alias") else 0.97
                    out.append(ChoiceMatch(p.value, span, text, p.source, score))
                elif text.lower() not in ordinary:
                    out.append(ChoiceMatch(p.value, span, text, p.source, GUESS_SCORE, guess=True))
        stems = [stem(t.text) for t in toks]
        for n, targets in self._by_stems.items():
            for start in range(len(toks) - n + 1):
                for i in targets.get(tuple(stems[start : start + n]), ()):
                    if i not in hit:
                        span = (toks[start].start, toks[start + n - 1].end)
                        p = self.phrases[i]
                        out.append(ChoiceMatch(p.value, span, question[span[0] : span[1]], p.source, 0.93))
        return out

    # --- distinctive words ---------------------------------------------------------------------
    def partial_names(self, question: str, toks: list[Word], ordinary: frozenset[str]) -> list[ChoiceMatch]:
        """Distinctive words of listed names: 'Tesla' finds 'Tesla Inc.' when no other value has it; never
        from a word the template's examples use as an ordinary word ('music' in 'play some music')."""
        by_value: dict[Any, list[Word]] = defaultdict(list)
        for k, t in enumerate(toks):
            value = self._distinctive.get(t.lower)
            if value is None or t.lower in ordinary or _in_another_name(question, toks, k, value, ordinary):
                continue
            if self._against_another(toks, k, k, value):
                continue
            by_value[value].append(t)
        for k in range(len(toks) - 1):
            a, b = toks[k], toks[k + 1]
            value = self._distinctive_pairs.get((a.lower, b.lower))
            if value is None or question[a.end : b.start].strip() or {a.lower, b.lower} <= ordinary:
                continue
            if _in_another_name(question, toks, k, value, ordinary, k + 1) or self._against_another(
                toks, k, k + 1, value
            ):
                continue
            by_value[value] += [w for w in (a, b) if w not in by_value[value]]
        out = []
        for value, hits in by_value.items():
            span = (hits[0].start, hits[-1].end)
            significant = [w for w in words(str(value)) if w.lower not in _GENERIC]
            coverage = len(hits) / max(1, len(significant))
            score = 0.78 + 0.1 * min(coverage, 1)
            out.append(ChoiceMatch(value, span, question[span[0] : span[1]], "partial_name", score))
        return out

    def _against_another(self, toks: list[Word], first: int, last: int, value: Any) -> bool:
        """Words `first` to `last` are one side of a match whose other side the value does not name and no other
        listed value does either: 'Huskies' of 'Huskies vs Utes' is no 'Owls Vs Huskies' (either order of the
        value's own sides is that value; 'Engineering vs Sales' names two listed values; 'Ford vs last year'
        sets Ford against no name)."""
        own = {w.lower for w in words(str(value))}
        for step, at in ((1, last + 1), (-1, first - 1)):
            if not (0 <= at < len(toks) and toks[at].lower in _VERSUS):
                continue
            other = at + step
            while 0 <= other < len(toks) and toks[other].lower in _GENERIC:  # 'vs the Utes'
                other += step
            side: list[Word] = []  # the other side's name words, up to three ('vs Boston Celtics', 'Temple Owls vs')
            while 0 <= other < len(toks) and len(side) < 3 and may_be_in_a_name(toks[other]):
                side.append(toks[other])
                other += step
            said = {w.lower for w in side}
            if side and not own & said and not any(w in self._distinctive for w in said):
                return True
        return False

    # --- misspellings --------------------------------------------------------------------------
    def fuzzy(self, question: str, toks: list[Word], floor: float, ordinary: frozenset[str]) -> list[ChoiceMatch]:
        """Misspellings: word windows of each phrase length against the phrases with rapidfuzz, scores >=
        floor. A window whose word the examples use as an ordinary word, and that the phrase does not
        contain, matches nothing ('book' is not a misspelt 'Brook' when the examples say 'book a table')."""
        out: list[ChoiceMatch] = []
        for n, (ids, texts) in self._fuzzy.items():
            spans = [(toks[i].start, toks[i + n - 1].end) for i in range(len(toks) - n + 1)]
            windows = [(s, question[s[0] : s[1]].lower()) for s in spans]
            windows = [(s, w) for s, w in windows if len(w) >= 4]
            if not windows:
                continue
            scores = process.cdist(
                [w for _, w in windows], texts, scorer=fuzz.ratio, score_cutoff=floor, dtype=np.float32
            )
            for (span, _), row in zip(windows, scores, strict=True):
                best = int(row.argmax())  # the first of equals, like extractOne
                if row[best] < floor:
                    continue
                phrase = self.phrases[ids[best]]
                if _ordinary_guess(toks, span, phrase, ordinary) or _other_word(toks, span, phrase):
                    continue
                score = 0.6 + 0.3 * float(row[best]) / 100
                out.append(ChoiceMatch(phrase.value, span, question[span[0] : span[1]], "fuzzy", score))
        return out


def _other_word(toks: list[Word], span: Span, phrase: Phrase) -> bool:
    """A window word the phrase does not contain that is a word of its own: a number ('Scout 13' for 'Scout
    14'), or a word of the language that spells other sounds ('Iceland' for 'Ireland', 'Austria' for
    'Australia'); a spelling of the same sounds is the value ('theatre' for 'Theater', 'Columbia' for
    'Colombia', 'Smyth' for 'Smith')."""
    own = {w.lower for w in words(phrase.text)}
    window = [t.lower for t in toks if inside(t.span, span)]
    if any(w not in own and any(c.isdigit() for c in w) for w in window):
        return True
    known = [w for w in window if w not in own and w in known_words()]
    return bool(known) and _sounds(" ".join(window)) != _sounds(phrase.text)


_SAME_SOUND = str.maketrans({"k": "c", "q": "c", "z": "s"})


def _sounds(text: str) -> str:
    """The consonants of a text in order, accents folded, c/k/q and s/z as one, doubles as one: the same for
    spellings of the same word ('jewellery' and 'jewelry', 'Katherine' and 'Catherine', 'München' and
    'Munchen'), different for other words ('Iceland' and 'Ireland')."""
    folded = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode().translate(_SAME_SOUND)
    consonants = [c for c in folded if c.isalnum() and c not in "aeiouy"]
    return "".join(c for i, c in enumerate(consonants) if i == 0 or c != consonants[i - 1])


def _ordinary_guess(toks: list[Word], span: Span, phrase: Phrase, ordinary: frozenset[str]) -> bool:
    """A window word the template's examples use as an ordinary word, or a function word ('a', 'the', 'of'),
    that the phrase itself does not contain: the misspelling would rest on it ('book' for 'Brook'; 'a young'
    for 'Mia Young'; 'new' in 'new yrok' is fine)."""
    own = {w.lower for w in words(phrase.text)}
    window = [t.lower for t in toks if inside(t.span, span)]
    return any((w in ordinary or w in _FUNCTION_WORDS) and w not in own for w in window)


def suggestions(given: str, values: list[Any], limit: int = 3) -> list[Any]:
    """The valid values closest to what was asked, for a clarification."""
    if not given or not values:
        return []
    found = process.extract(
        given.lower(), [str(v).lower() for v in values], scorer=fuzz.WRatio, limit=limit, score_cutoff=60
    )
    return [values[i] for _, _, i in found]
