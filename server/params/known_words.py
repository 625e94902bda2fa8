"""Words of English (and the names of places, people and things common in it) that a misspelling is not.

'Iceland' is no misspelt 'Ireland', nor 'Austria' 'Australia': a word of the language is what it says. The
list is the whole words of the bundled encoder's WordPiece vocabulary (about 20,000 of four letters or more),
read once; without the model package it is empty and misspellings are judged as before.
"""

from __future__ import annotations

import json
from functools import lru_cache

MIN_LENGTH = 4  # shorter vocabulary entries are mostly abbreviations and word pieces


@lru_cache(maxsize=1)
def known_words() -> frozenset[str]:
    from ..embedding.model_folder import bundled_folder  # the vocabulary ships with the encoder

    try:
        vocab = json.loads(bundled_folder().tokenizer.read_text(encoding="utf-8"))["model"]["vocab"]
    except Exception:  # no model package, or a tokenizer of another shape: no list
        return frozenset()
    return frozenset(word for word in vocab if word.isalpha() and word.isascii() and len(word) >= MIN_LENGTH)
