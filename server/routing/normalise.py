"""Question normalisation before embedding and parameter extraction.

Why: the embedding model and the extractors see text the way it was typed. Full-width letters
("ｈｏｗ ｍａｎｙ"), curly quotes, en dashes, non-breaking or zero-width spaces are different tokens
to them, so the same question scored 0.146 instead of 0.653 and a quoted value in ‘…’ was not
found. The router and extractors therefore get `normalise_question(text)`; the original text is
kept for display and the routing log.

Steps, in order: Unicode NFKC (compatibility forms: full-width, ligatures, NBSP, superscripts);
typographic quotes to `'` and `"`; dashes and the minus sign to `-`; invisible format characters
(zero-width space/joiners, BOM, soft hyphen) removed; control characters and every run of
whitespace to one space; ends trimmed. Case is kept (proper names are found by their case).
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ..errors import BadRequest

_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u2035\u2039\u203a"  # ‘ ’ ‚ ‛ ′ ‵ ‹ ›
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\u301d\u301e\u301f"  # “ ” „ ‟ ″ ‶ « » 〝 〞 〟
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58"  # ‐ ‑ ‒ – — ― − ⸺ ⸻ ﹘

_TRANSLATE = str.maketrans(
    {**dict.fromkeys(_SINGLE_QUOTES, "'"), **dict.fromkeys(_DOUBLE_QUOTES, '"'), **dict.fromkeys(_DASHES, "-")}
)
_WHITESPACE = re.compile(r"[\s\x00-\x1f\x7f]+")  # ASCII control characters too (the ASCII path skips _visible)


@functools.lru_cache(maxsize=1024)  # the request check and the service both normalise each question
def normalise_question(text: str) -> str:
    """The question as the router and the extractors should see it (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE)
    if not text.isascii():
        text = "".join(_visible(ch) for ch in text)
    return _WHITESPACE.sub(" ", text).strip()


def _visible(ch: str) -> str:
    category = unicodedata.category(ch)
    if category == "Cf":  # zero-width space/joiners, BOM, soft hyphen, direction marks
        return ""
    if category == "Cc":  # control characters (tabs and newlines included) separate words
        return " "
    return ch


def checked_question(text: str, max_chars: int, field: str) -> str:
    """A question as asked, whitespace collapsed: blank (also once normalised: zero-width characters
    alone) or longer than `max_chars` (as asked, or once normalised: NFKC turns some single characters
    into many, e.g. U+FDFA into 18) is the client's error."""
    question = " ".join(text.split())
    normalised = normalise_question(question)
    if not normalised:  # nothing but spaces or invisible characters (zero-width spaces, BOM)
        raise BadRequest(f"{field}: must not be blank")
    if len(question) > max_chars or len(normalised) > max_chars:
        raise BadRequest(f"{field}: longer than {max_chars} characters")
    return question
