"""What the learned extractor sees of each word: the word and its neighbours, its shape, the cue words
before it, and what the deterministic readers found there (a listed value of parameter X, a number, a
date). Training and tagging build features with this one function, so a fitted model and the questions
it tags always agree on them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..text import Span, Word, overlaps, words

FEATURES_VERSION = "2"  # part of every model's fingerprint: a change here refits


@dataclass(frozen=True)
class Mark:
    """Something a deterministic reader found: 'list:from_city', 'number', 'date', 'time' over a span."""

    tag: str
    span: Span


def tokens(text: str) -> list[Word]:
    return words(text)


def _shape(word: str) -> str:
    shape = re.sub(r"[A-Z]+", "X", re.sub(r"[a-z]+", "x", re.sub(r"\d+", "d", word)))
    return shape[:6]


def _word(toks: Sequence[Word], i: int, listed: Sequence[bool] = ()) -> str:
    if i < 0:
        return "<s>"
    if i >= len(toks):
        return "</s>"
    return "<listed>" if listed and listed[i] else toks[i].lower


def _sentence_break(toks: Sequence[Word], i: int, text: str) -> bool:
    """Whether a sentence ends just before word i (the text between it and the word before holds . ! ?)."""
    return any(c in text[toks[i - 1].end : toks[i].start] for c in ".!?")


def sentence_features(toks: Sequence[Word], marks: Sequence[Mark], text: str) -> list[list[str]]:
    """One list of feature strings per word of `text` (`toks`, its words)."""
    covered: list[list[str]] = [[] for _ in toks]
    for mark in marks:
        first = True
        for i, tok in enumerate(toks):
            if overlaps(tok.span, mark.span):
                covered[i].append(("B:" if first else "I:") + mark.tag)
                covered[i].append("in:" + mark.tag)
                first = False
    # a word inside a listed value is seen as '<listed>', not as itself: which parameter a listed value fills
    # is learned from the words around it, never from the value (a city seen only as a destination in the
    # examples is still an origin after 'from')
    listed = [any(m.startswith("in:list:") for m in marks) for marks in covered]
    out = []
    for i, tok in enumerate(toks):
        w = _word(toks, i, listed)
        feats = [
            "bias",
            "w=" + w,
            "shape=" + _shape(tok.text),
            "w-1=" + _word(toks, i - 1, listed),
            "w-2=" + _word(toks, i - 2, listed),
            "w+1=" + _word(toks, i + 1, listed),
            "w+2=" + _word(toks, i + 2, listed),
            "w-1|w=" + _word(toks, i - 1, listed) + "|" + w,
            "w|w+1=" + w + "|" + _word(toks, i + 1, listed),
            "w-2|w-1=" + _word(toks, i - 2, listed) + "|" + _word(toks, i - 1, listed),
        ]
        if not listed[i]:
            feats += ["suf3=" + w[-3:], "pre3=" + w[:3]]
        if tok.text[:1].isupper():
            feats.append("title")
            if i > 0 and tok.text != "I" and not _sentence_break(toks, i, text):
                feats.append("title_mid")  # a capital inside a sentence: a name, where a sentence's first word is not
        if any(c.isdigit() for c in w):
            feats.append("digit")
        feats += covered[i]
        for j in (i - 1, i + 1):
            if 0 <= j < len(toks):
                side = "prev" if j < i else "next"
                feats += [f"{side}:{m}" for m in covered[j] if m.startswith("in:")]
        out.append(feats)
    return out


def bio_labels(toks: Sequence[Word], spans: Sequence[tuple[int, int, str]]) -> list[str]:
    """'B-from_city', 'I-from_city', 'O' per word, from marked character spans (start, end, parameter)."""
    labels = ["O"] * len(toks)
    for start, end, name in spans:
        inside = [i for i, tok in enumerate(toks) if overlaps(tok.span, (start, end))]
        for n, i in enumerate(inside):
            labels[i] = ("B-" if n == 0 else "I-") + name
    return labels
