"""Sizes said in everyday words: 'a medium-sized car' is the standard one, 'a large car' the full-size one.

The words of the size scale (scale_words.py reads them): a parameter whose allowed values each name a size
of their own ('Compact', 'Standard', 'Full-size'; 'small', 'medium', 'large') gets the value at the size the
question's words say. Letters alone ('S', 'M', 'L') and classes that are no sizes ('Economy', 'Premium')
are left to the list reader.
"""

from __future__ import annotations

from .scale_words import ScaleWords

SMALL, MEDIUM, LARGE, EXTRA_LARGE = 1, 2, 3, 4

_SIZED = r"(?:[\s-]+sized?)?"  # 'medium sized', 'mid-size', 'large-sized'
_BIG = r"(?:large|full[\s-]?size)"  # not 'big', which is as often a day's or a group's
# longest first within a size; every pattern is matched as whole words
_PHRASES: tuple[tuple[int, str], ...] = (
    (EXTRA_LARGE, rf"(?:extra|very|really)[\s-]+large{_SIZED}|x[\s-]?large|oversized?"),
    (MEDIUM, rf"not\s+(?:too|very|that|so|overly)\s+(?:{_BIG}|small)"),
    (MEDIUM, rf"medium{_SIZED}|mid[\s-]?size[ds]?|intermediate|standard{_SIZED}"),
    (MEDIUM, r"(?:regular|average|normal)[\s-]+sized?"),
    (SMALL, rf"(?:small|smaller|tiny){_SIZED}|(?:sub[\s-]?)?compact|mini"),  # not 'a little later'
    (LARGE, rf"(?:large|larger){_SIZED}|full[\s-]?sized?"),
)
SIZE = ScaleWords("size_words", _PHRASES)
