"""Price levels said in everyday words: 'not very costly' is moderate, 'pricey' expensive, 'on a budget' cheap.

The words of the price scale (scale_words.py reads them): a parameter whose allowed values each name a level
('inexpensive', 'moderate', 'expensive', 'very expensive'; '$' to '$$$$'; 'cheap', 'mid-range', 'luxury')
gets the value at the level the question's words say.
"""

from __future__ import annotations

from .scale_words import ScaleWords

CHEAP, MODERATE, EXPENSIVE, VERY_EXPENSIVE = 1, 2, 3, 4

_HIGH = r"(?:expensive|pricey|pricy|costly|high[\s-]?end|upscale|high[\s-]priced)"
_PRICED = r"(?:priced|prices?|pricing|price\s+range|cost)"
_INTENSE = r"(?:very|really|extremely|super|ultra|incredibly|most)"
_SYMBOL = r"(?<!\d)(?<!\d\s){}(?!\s*\d)"  # '$$' is a level, '30 $' and '$ 100' amounts
_FANCY = r"\s+(?:(?:really|very|quite|pretty|more)\s+)?fancy(?!\s+dress)"  # a fancy dress is a costume
# longest first within a level; every pattern is matched as whole words
_PHRASES: tuple[tuple[int, str], ...] = (
    (VERY_EXPENSIVE, rf"{_INTENSE}[\s-]+{_HIGH}"),
    (VERY_EXPENSIVE, r"luxury|luxurious|exorbitant(?:ly\s+priced)?|extravagant|" + _SYMBOL.format(r"\$\$\$\$")),
    (MODERATE, rf"not\s+(?:very|too|that|so|overly|super|really|terribly|all\s+that)\s+(?:{_HIGH}|fancy)"),
    (MODERATE, rf"(?:moderately|reasonably|fairly|decently|sensibly|averagely)[\s-]+{_PRICED}"),
    (
        MODERATE,
        rf"(?:moderate|intermediate|medium|mid|middle|reasonable|fair|affordable|decent|economical)[\s-]+{_PRICED}"
        r"|average[\s-]+(?:priced|pricing|price\s+range)",  # not 'what is the average price'
    ),
    (MODERATE, r"mid[\s-]?range|mid[\s-]?priced|moderate|affordable|economical|" + _SYMBOL.format(r"\$\$")),
    (
        CHEAP,
        rf"not\s+{_HIGH}|below[\s-]+average[\s-]+{_PRICED}|low[\s-]+{_PRICED}|low[\s-]budget"
        r"|least\s+(?:expensive|pricey|pricy|costly)|most\s+(?:affordable|economical|reasonably\s+priced)",
    ),
    (
        CHEAP,
        r"(?:dirt[\s-]+)?cheap(?:er|est)?|inexpensive|on\s+a\s+(?:tight\s+)?budget|bargain|thrifty"
        # 'a budget place', 'budget-friendly'; not 'my budget is $100', "budget doesn't matter"
        r"|budget(?=[\s-]+(?:places?|restaurants?|spots?|options?|hotels?|friendly|meals?|eats|food|dining|"
        r"prices?|priced|airlines?|flights?|cars?|rooms?))|" + _SYMBOL.format(r"\$"),
    ),
    (EXPENSIVE, rf"above[\s-]+average[\s-]+{_PRICED}|high[\s-]+{_PRICED}|{_HIGH}"),
    (
        EXPENSIVE,
        _SYMBOL.format(r"\$\$\$") + r"|upmarket|posh|ritzy|swanky"
        # the adjective, not the verb: 'a fancy place', 'something really fancy'; not 'do you fancy sushi'
        rf"|(?:a|an|the|some|something|somewhere|anywhere|anything){_FANCY}"
        r"|fancy(?=\s+(?:places?|restaurants?|spots?|prices?|priced|dinners?|meals?|food|menu))",
    ),
)
PRICE = ScaleWords("price_words", _PHRASES)
