"""Sizes said in everyday words: 'a medium-sized car' is the standard one, 'a large car' the full-size one.

The words of the size scale (scale_words.py reads them): a parameter whose allowed values each name a size
of their own ('Compact', 'Standard', 'Full-size'; 'small', 'medium', 'large') gets the value at the size the
question's words say. Letters alone ('S', 'M', 'L') and classes that are no sizes ('Economy', 'Premium')
are left to the list reader.
"""

from __future__ import annotations

from .scale_words import ScaleWords

SMALL, MEDIUM, LARGE, EXTRA_LARGE = 1, 2, 3, 4

_SIZED = r"[\s-]+sized?"  # 'medium sized', 'large-size'
# phrases that say a size wherever they are; longest first within a size; every pattern is matched as whole words
_PHRASES: tuple[tuple[int, str], ...] = (
    (EXTRA_LARGE, rf"(?:extra|very|really)[\s-]+large(?:{_SIZED})?|x[\s-]?large|oversized?"),
    (MEDIUM, r"not[\s-]+(?:too|very|that|so|overly)[\s-]+(?:large|full[\s-]?size|small)"),
    (MEDIUM, rf"medium{_SIZED}|mid[\s-]?size[ds]?|(?:standard|regular|average|normal|intermediate){_SIZED}"),
    (SMALL, rf"(?:small|compact|tiny){_SIZED}"),
    (LARGE, rf"large{_SIZED}|full[\s-]?sized?"),
)
# ... and words that say a size only of the thing they stand before ('a large car', 'a small one'; not 'a small
# favour', 'an intermediate stop', 'Mr. Small')
_BEFORE_A_NOUN: tuple[tuple[int, str], ...] = (
    (EXTRA_LARGE, r"largest"),
    (LARGE, r"large|larger"),
    (MEDIUM, r"medium|intermediate"),
    (SMALL, r"small|smaller|smallest|tiny"),
)
# ... and the words that make an allowed value a size (read in a question by the list reader)
_VALUE_NAMES: tuple[tuple[int, str], ...] = ((SMALL, r"compact|mini"), (MEDIUM, r"standard|regular"))
SIZE = ScaleWords("size_words", _PHRASES, _BEFORE_A_NOUN, _VALUE_NAMES)
