"""A value the question rules out is not the value it asks for: the one rule.

"employees not in Engineering", "customers outside the United States", "orders from anyone other than Acme",
"who doesn't work in Sales", "no concerts please", "I don't want games": the readers find the name (or the
word that implies it), and filling the parameter with it would answer the
opposite of the question. A template parameter holds a value to match, never one to leave out, so such a
candidate is dropped (metadata.extraction_left_out says why): a required parameter is then asked for, an
optional one stays unset. Several values named as a list under a denial are never read as a list either
(extractor.py `_DENIED`).
"""

from __future__ import annotations

import re

from ..templates import ParameterSpec, ParameterType
from .candidates import Candidate, item_type
from .text import before

# the words right before the value: a denial, then at most one word of being somewhere or of choosing, and
# linking words ('not in', "isn't from", "doesn't work in", 'not based in', "don't include", 'not yet',
# 'outside of the', 'other than', 'anything but'); a denial of another verb or noun ("haven't ordered in
# Germany", 'without orders in Germany', 'not only in Engineering') rules out that, not the value
_LINKS = r"(?:in|from|at|by|with|for|of|on|to|the|a|an|any|our)"
_BETWEEN = (
    r"(?:work|works|working|live|lives|living|based|located|sit|sits|belong|belongs|come|comes|be|yet|"
    r"include|including|count|counting|want|need|like)"
)
_RULED_OUT = re.compile(
    r"(?:\b(?:not|never|no|without|except|excluding|exclude|outside|besides|minus|other\s+than|apart\s+from)"
    r"|n't|\b(?:anything|everything|anyone|everyone|all)\s+but)"
    rf"(?:\s+{_BETWEEN})?(?:\s+{_LINKS})*\s+$",
    re.IGNORECASE,
)
# a text value, and a day or a period ('hired in 2024 but not in December', 'orders except March'): a range
# parameter holds the dates to match, never ones to leave out
_RULED_KINDS = (ParameterType.STRING, ParameterType.ENUM, ParameterType.DATE, ParameterType.DATETIME)
REASON = "ruled out by the question: a parameter takes a value to match, not one to leave out"


def ruled_out(question: str, cand: Candidate) -> bool:
    """Whether the words just before the candidate rule its value out."""
    return cand.span is not None and rules_out(question, cand.span[0])


def rules_out(question: str, at: int) -> bool:
    """Whether the words just before position `at` rule out what is said there ('but not in', 'except')."""
    return _RULED_OUT.search(before(question, at)) is not None


def split_ruled_out(
    spec: ParameterSpec, question: str, cands: list[Candidate]
) -> tuple[list[Candidate], list[Candidate]]:
    """(kept, ruled out) for a text or date parameter's candidates; numbers and flags have their own readers
    of 'not more than' and 'without', as the date reader has of 'not before' and 'no later than'."""
    if item_type(spec) not in _RULED_KINDS:
        return cands, []
    out = [c for c in cands if ruled_out(question, c)]
    return [c for c in cands if c not in out], out
