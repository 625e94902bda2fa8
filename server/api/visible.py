"""The pattern that says, in /openapi.json, what the server means by a question that is not blank: at least
one character that question normalisation (routing/normalise.py) keeps, i.e. not whitespace, not a control
character (Cc) and not an invisible format character (Cf), nor one whose NFKC form is only those.

Built from the running Python's Unicode tables, the ones normalisation uses, the first time the document
is generated (about 0.2 s), never at import. tests/unit/test_visible_pattern.py checks every code point
against `normalise_question`.
"""

from __future__ import annotations

import functools
import sys
import unicodedata


def invisible(ch: str) -> bool:
    """Normalisation drops it or makes it a space."""
    if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf"):
        return True
    if not unicodedata.decomposition(ch).startswith("<"):  # no compatibility form: NFKC keeps it visible
        return False
    return all(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in unicodedata.normalize("NFKC", ch))


@functools.cache
def visible_pattern() -> str:
    """A regex (search semantics) that matches text with at least one visible character."""
    ranges: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if invisible(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    parts = (_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in ranges)
    return "[^" + "".join(parts) + "]"


def _escape(code: int) -> str:
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
