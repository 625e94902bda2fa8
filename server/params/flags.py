"""Yes/no parameters read from the words of their names: 'active employees' sets `active`, 'without wifi'
unsets `has_wifi`, 'wifi not needed' sets no condition at all.

A flag is set by a word of its name (of several, the one that says which kind: `_telling`), unset by a
negation before or after it, and left alone when the question says there is no need either way. A price named
right after the word turns the negation round: 'without an entry fee' is free entry.
"""

from __future__ import annotations

import re

from ..templates import ParameterSpec
from .candidates import Candidate
from .text import name_tokens, name_words, stem, words, wordset

_NOT = r"(?:\b(?:not|no|non|without|exclud(?:e|ing)|except|never|dont|doesnt|didnt|isnt|arent|wont|cant)\b|n't)"
_ARTICLE = r"(?:any|a|an|the|for|with)"
# a negation, then at most one word of its own between the verbs and articles that carry it to the flag's word:
# 'not free', 'without wifi', 'do not have an entry fee', "don't have outdoor seating", 'not good for kids'
_GAP = r"[^\w,.;:!?]+"  # between words of one clause: 'no pool, wifi' denies the pool, not the wifi
_NEGATION = re.compile(
    _NOT
    + r"\W*(?:(?:have|has|had|want|wants|any|a|an|the)"
    + _GAP
    + r"){0,2}(?:\w+"
    + _GAP
    + r")?(?:"
    + _ARTICLE
    + _GAP
    + r")?$"
)
# ... or after the word: 'pets not allowed', 'smoking is not allowed', "kids aren't welcome"
_NEGATED_AFTER = re.compile(
    r"^\W*(?:(?:is|are|was|were)\W*)?" + _NOT + r"\W*(?:allowed|permitted|welcome|accepted|ok|okay|wanted|"
    r"available|included|offered|provided)\b|^\W*(?:won't|will\s+not|wouldn't|would\s+not|doesn't|does\s+not)\W+work\b"
)
# no need either way: 'wifi not needed', "i don't care about wifi", "doesn't need wifi", 'no need for wifi',
# 'wifi is not required', "wifi doesn't matter": the question sets no condition on the flag
_SO_MUCH = r"(?:\W+(?:much|really|either|way|too|at|all|so|very|particularly|especially))*"  # 'care much about'
_INDIFFERENT_BEFORE = re.compile(
    # 'doesn't need wifi', "don't need it to have a pool", "don't need the hotel to have", "doesn't have to have"
    _NOT + r"\W*(?:really\W+)?(?:(?:need|needs|require|requires)(?:(?:\W+\w+){0,2}?\W+to\W+(?:have|allow|offer|include|"
    r"provide|be))?|(?:have|has)\W+to\W+(?:have|be))\W+(?:(?:a|an|any|the)\W+)?$"
    # "i don't care if the hotel has", "don't care much about", "i don't mind not having a"
    r"|" + _NOT + r"\W*(?:really\W+)?(?:care|fussed)" + _SO_MUCH + r"\W+(?:about|if|whether|for)\b(?P<gap>[^,.;:!?]*)$"
    r"|" + _NOT + r"\W*mind\W+not\W+having\W+(?:(?:a|an|any|the)\W+)?$"
    r"|\bno\W+need\W+(?:for|of)\W+(?:(?:any|a|an|the)\W+)?$"
)
# ... but not minding it welcomes it: "i won't mind if it is a shared ride", "i don't mind pets" (no negation)
_ACCEPTING = re.compile(_NOT + r"\W*mind\W+(?:(?:if|whether)\W+)?(?:[^\W]+[^\w,.;:!?]+){0,3}$")
_CLAUSE = wordset("but just and only as except though so still also plus")  # a new clause: 'i don't care if, but'


def _indifferent_before(pre: str) -> bool:
    """'i don't care if the hotel has', "doesn't need", 'no need for': nothing to say of the flag after it."""
    m = _INDIFFERENT_BEFORE.search(pre)
    if m is None:
        return False
    gap = (m["gap"] or "").split()
    return len(gap) <= 4 and not any(w in _CLAUSE for w in gap)


_COST_WORD = r"\s+(?:fees?|charges?|costs?|prices?|payments?)"  # a price named after a flag's word: 'an entry fee'
_COST = rf"(?:{_COST_WORD})?"  # 'entry fee doesn't matter'
_INDIFFERENT_AFTER = re.compile(
    r"^" + _COST + r"\W*(?:(?:is|are)\W*)?" + _NOT + r"\W*(?:really\W+)?(?:needed|required|necessary|important|"
    r"essential|mandatory|a\s+must|a\s+concern|an\s+issue|a\s+priority)\b|^"
    + _COST
    + r"\W*(?:(?:does|do)\W*)?"
    + _NOT
    + r"\W*matter\b"
)
# ... and 'no wifi needed', 'no parking required': the negation before, the need after
_NEEDED_AFTER = re.compile(r"^\W*(?:(?:is|are)\W+)?(?:needed|required|necessary)\b")
_COST_AFTER = re.compile(_COST_WORD + r"\b")  # 'without an entry fee', 'a parking charge'
# words of a boolean parameter's name that say nothing of it ('good_for_kids' is about kids, not 'for')
_GENERIC_BOOL_WORDS = wordset(
    "is has include including only show with flag the a an for of to in on at by and or are be can allow allowed "
    "serves serve offers offer accepts accept provides provide supports support includes "  # what it has, not which
    "good"  # good_for_kids: 'good attractions' says nothing of children
)


_ABSENT = frozenset({"free", "less"})  # 'smoke-free', 'alcohol-less': the compound says the thing is not there


def _names_key(word: str, telling: set[str], keys: set[str]) -> bool | None:
    """Whether a word names a flag by a word that tells it (`telling`, of its key words `keys`): 'kids'
    (True), a hyphenated compound it leads ('kid-friendly': True, 'smoke-free': False), or neither (None)."""
    if stem(word) in telling:
        return True
    *lead, last = word.lower().split("-")
    if any(stem(part) in telling for part in lead):
        return last not in _ABSENT or last in keys  # 'gluten-free' names gluten_free itself
    return None


def _telling(spec: ParameterSpec) -> tuple[set[str], set[str]]:
    """The words of a flag's name that set it alone, and all its key words. Of several, the one that says which
    kind: the first ('shared' of shared_ride, 'vegetarian' of has_vegetarian_options, 'free' of free_entry),
    or after a noun in -ing the last ('outdoors' of has_seating_outdoors); the noun it qualifies says only
    what the template is about ('i need a ride' is no shared ride, 'what are my options' no vegetarian one)."""
    keys = [stem(t) for t in name_words(spec.name) if stem(t) not in _GENERIC_BOOL_WORDS]
    if len(keys) < 2:
        return set(keys), set(keys)
    return {keys[-1] if keys[0].endswith("ing") else keys[0]}, set(keys)


_NEXT_WORD = re.compile(r"[\s-]+([a-z]+)")


def names_flag(spec: ParameterSpec, question: str) -> bool:
    """The question says a word of the flag's name, whatever it says of it: a word the examples imply the flag
    by is then no reading of its own ('i don't need wifi' sets nothing, even where examples with wifi set it)."""
    _, keys = _telling(spec)
    return any(_names_key(w.text, keys, keys) is not None for w in words(question))


def boolean_candidates(spec: ParameterSpec, question: str) -> list[Candidate]:
    """'active employees' -> active=true, 'not active' / 'without remote' / 'pets not allowed' -> false; 'wifi
    not needed' sets nothing; of a price after the word, the negation denies the price: 'without an entry fee'
    -> free_entry=true (has_parking=true)."""
    telling, keys = _telling(spec)
    out = []
    low = question.lower()
    free_flag = "free" in name_tokens(spec.name)
    for w in words(question):
        priced = _COST_AFTER.match(low, w.end) is not None  # 'without an entry fee' denies the fee, not the entry
        named = _names_key(w.text, telling if not priced else keys, keys)
        if named is None:
            continue
        end = w.end
        while (nxt := _NEXT_WORD.match(low, end)) is not None and stem(nxt[1]) in keys:
            end = nxt.end()  # 'shared ride is not ok': what follows the flag's name, not its first word
        pre, post = low[max(0, w.start - 30) : w.start], low[end : end + 30]
        if _indifferent_before(pre) or _INDIFFERENT_AFTER.match(post):
            continue
        if _NEEDED_AFTER.match(post) and _NEGATION.search(pre):
            continue
        accepted = _ACCEPTING.search(pre) is not None
        negated = not named or (not accepted and bool(_NEGATION.search(pre))) or bool(_NEGATED_AFTER.match(post))
        value = (negated or not free_flag) if priced else not negated
        out.append(Candidate(spec.name, value, w.span, w.text, "boolean", 0.8, key=("bool", w.span)))
    for m in re.finditer(r"\b(true|false|yes|no)\b", low):
        if len(low.strip(" ?!.")) <= 5:  # the whole answer is 'yes' or 'no'
            out.append(
                Candidate(
                    spec.name, m.group() in ("true", "yes"), m.span(), m.group(), "boolean", 0.7, key=("bool", m.span())
                )
            )
    return out
