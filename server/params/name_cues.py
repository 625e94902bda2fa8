"""A value right after the word that names its parameter: 'the album Voicenotes' is the album, 'the song Lost
Within' the song, 'songs by Ellie Goulding' the artist, 'a movie starring Don Hewitt' the actor.

A free-text parameter (no allowed values) is named by the words of its name that are not generic ('album',
'song' of song_name, 'event' of event_name); one who makes the thing (artist, author, director, ...) also by
'by', and one who plays in it (actors, starring, cast) by 'starring', 'featuring' or 'with'. A reader's
candidate right after such words is raised to CUED, as params/directions.py raises a value after its own cue,
and marked, so a learned model's reading does not drop it: the words say which parameter it fills, whatever
few examples the model was fitted on. Other candidates are left as they are.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..templates import ParameterSpec, ParameterType
from .candidates import Candidate, item_type
from .directions import CUED
from .text import inside, name_tokens

_GENERIC = frozenset({"name", "names", "title", "id", "of", "the", "a", "to", "new", "value", "text", "number"})
_MAKERS = frozenset(
    {"artist", "singer", "band", "author", "writer", "director", "directed", "composer", "performer", "musician"}
)
_PLAYERS = frozenset({"actor", "actors", "actress", "starring", "cast", "star", "stars"})
# a reading in lower case is cued only when a list holds it ('the city of boston'): after the words of the name
# an ordinary noun is no value ('product category Electronics', 'customer service calls', 'an event with my friend')
_LISTED = frozenset({"values_from", "values_from_alias", "alias", "allowed_values", "quoted", "email"})
_BETWEEN = r"(?:\s+(?:the|a|an|called|named|titled|of))*\s*:?\s*$"  # 'the album called', 'the city of'


@lru_cache(maxsize=2048)
def _cue(name: str) -> re.Pattern[str] | None:
    tokens = name_tokens(name)
    heads = sorted(t for t in tokens - _GENERIC if len(t) >= 3 and t.isalpha())
    alternatives = [rf"\b{re.escape(t)}s?{_BETWEEN}" for t in heads]
    if tokens & _MAKERS:
        alternatives.append(r"\bby\s*$")
    if tokens & _PLAYERS:
        alternatives.append(r"\b(?:starring|featuring|feat\.?|with)\s*$")
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


def named(spec: ParameterSpec, question: str, candidates: list[Candidate]) -> list[Candidate]:
    """The parameter's candidates, those right after the words that name it raised to CUED (in place)."""
    if spec.allowed_values or item_type(spec) not in (ParameterType.STRING, ParameterType.ENUM):
        return candidates
    cue = _cue(spec.name)
    if cue is None:
        return candidates
    after = [
        (c, c.span)
        for c in candidates
        if c.span is not None
        and not c.cued
        and (c.text[:1].isupper() or c.text[:1].isdigit() or c.extractor in _LISTED)
        and cue.search(question[max(0, c.span[0] - 40) : c.span[0]])
    ]
    for cand, span in after:  # of two readings after the words, the surer ('directed by Peter Farrelly online')
        if any(o[0] == span[0] and (other.score, o[1]) > (cand.score, span[1]) for other, o in after):
            continue
        cand.score = CUED + 0.02 * min(cand.score, 1.0)  # the surer reader first among cued ones
        cand.cued = True
    raised = [span for cand, span in after if cand.cued]
    # a shorter reading inside the words the cue names is part of that value ('Visions' of 'album Night Visions')
    return [c for c in candidates if c.span is None or not any(c.span != r and inside(c.span, r) for r in raised)]
