"""Follow-ups that change a value of the last answer, and corrections of it.

After an executed answer, a message such as "what about Sales?", "and for 2023?", "same for last year",
"only the top 3", "in Sales instead" supplies a value for a parameter of that answer's template: the
template runs again with the new value and the other values carried over. "no, I meant 2023" and
"not Engineering, Marketing" are corrections: the named value replaces the earlier one.

One rule decides (`is_carry_over`): the message must give at least one value of the last template, read
by the same extractors as any question (the learned one included); and it must either not be a question
of its own (no template clears the threshold by the new-question margin), or say that it continues ("what
about", "and", "instead", "only", a correction) while holding nothing but those values. A confident new
question starts over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..params.base import Extraction, ExtractionSource
from ..params.text import wordset
from .state import LastAnswer, TemplateRef

CarryKind = Literal["follow_up", "correction"]

# "what about X", "and for Y", "same for last year", "only the top 3", "in Sales instead", "now for 2023", and
# words that point back at the last answer's rows ("how many of those ...", "which of them ...")
_CONTINUES = re.compile(
    r"^\W*(?:(?:and|but|so|ok(?:ay)?|then|now|also)\b\W*)*(?:(?:what|how)\s+about|and|same|only|just|now|"
    r"then|also|try|make\s+(?:it|that)|change\s+(?:it|that)\s+to|for|in|with|without|at|on)\b|\binstead\b|\bas\s+well\b|"
    r"\b(?:of|among)\s+(?:those|these|them)\b",  # 'how many of those were returned?
    re.IGNORECASE,
)
# "no, I meant 2023", "I meant Marketing", "actually 2023", "sorry, 2023"; the value follows the cue
_CORRECTS = re.compile(
    r"^\W*(?:(?:no|nope|sorry|oops|wait)\b\W*)+(?:(?:i\s+)?(?:meant?|said|wanted)|make\s+(?:it|that)|"
    r"it\s+should\s+be|should\s+be)?\b|^\W*(?:i\s+meant?|actually|rather)\b",
    re.IGNORECASE,
)
# "not Engineering, Marketing", "not 2024 but 2023": the value after the comma (or 'but') replaces the first
_NOT_THIS = re.compile(r"^\W*(?:no\W+)?not\s+(?P<old>[^,;]+?)\s*(?:,|;|\bbut\b|\brather\b)\s*(?P<new>.+)$", re.I)
# words a follow-up wraps its values in, besides those of a clarification's answer
CUE_WORDS = wordset(
    "what how about and but so ok okay then now also same only just try make change instead as well no nope "
    "sorry oops wait meant mean said wanted actually rather should not there here that this those these one ones"
)


# "and Marketing too?", "Finance as well": the new value joins the one asked before ("can you also look into
# Toronto?" asks about Toronto instead: SGD's users mean the new value alone after "also")
_ADDS = re.compile(r"\b(?:too|as\s+well)\b", re.IGNORECASE)


def adds(message: str) -> bool:
    """The message adds its value to the one asked before instead of replacing it."""
    return _ADDS.search(message) is not None


@dataclass
class CarryOver:
    """The message read against the last answer: the text its values are read from, and what kind it is."""

    kind: CarryKind
    text: str  # the part of the message that holds the new values
    cue: bool  # the message says that it continues or corrects


def read_message(message: str) -> CarryOver:
    """Which kind of follow-up the words say the message is, and where its values are."""
    not_this = _NOT_THIS.match(message)
    if not_this:
        return CarryOver("correction", not_this.group("new"), True)
    corrects = _CORRECTS.match(message)
    if corrects and corrects.end() > 0:
        return CarryOver("correction", message[corrects.end() :], True)
    return CarryOver("follow_up", message, _CONTINUES.search(message) is not None)


_MAKE_IT = re.compile(r"^\W*make\s+(?:it|that)\b", re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:not|never|no\s+longer)\b|n't\b|\bdont\b", re.IGNORECASE)


def corrected_part(message: str) -> tuple[int, str] | None:
    """Where a message that replaces a value given before holds the new value: (offset, text) of the words
    after its cue ('no, just 2', 'actually 2023', 'not 2 but 4', 'make that 3'); None when it corrects
    nothing, or when the new words deny rather than give ('no, not 2', 'actually I don't need 2')."""
    not_this = _NOT_THIS.match(message)
    if not_this:
        start = not_this.start("new")
    elif (corrects := _CORRECTS.match(message)) and corrects.end() > 0:
        start = corrects.end()
    elif _MAKE_IT.match(message):
        start = 0
    else:
        return None
    text = message[start:]
    return None if _NEGATED.search(text) else (start, text)


def is_carry_over(said: list[str], carry: CarryOver, is_confident: bool, values_only: bool) -> bool:
    """The one rule: a value of the last template is given, and the message is not a question of its own."""
    if not said:
        return False
    if not is_confident:
        return True
    return carry.cue and values_only


def new_values(extraction: Extraction) -> dict[str, object]:
    """The values the message itself gave (not defaults)."""
    return {t.name: extraction.values.get(t.name) for t in extraction.trace if t.extractor != "default"}


def lookup(last: LastAnswer, sources: Mapping[str, ExtractionSource]) -> tuple[ExtractionSource, TemplateRef] | None:
    source = sources.get(last.template.adapter)
    if source is None or last.template.template_id not in source.templates:
        return None
    return source, last.template
