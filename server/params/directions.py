"""Where a text value goes from and to: 'from Delhi', 'to Los Angeles' fill an origin and a destination.

A text parameter whose name says it is where something starts (origin_city, from_location, source,
departure_airport) or where it ends (destination_city, to_location, arrival) takes the value its cue
words name: "I want to go to Los Angeles from Delhi" is Delhi to Los Angeles, whichever list holds each
city and whatever few examples a learned extractor was fitted on. A value right after a cue of the other
end is never its value ("I'm leaving Las Vegas" does not answer "where to?"); a value after its own cue
is the surest reading there is. Values without a cue keep the other readers' reading.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from ..templates import ParameterSpec, ParameterType
from .candidates import Candidate, closed, item_type
from .text import Span, name_tokens, overlaps

Direction = Literal["origin", "destination"]

_ORIGIN_NAMES = frozenset({"origin", "from", "source", "departure", "departing", "leaving", "start", "starting"})
_DESTINATION_NAMES = frozenset({"destination", "to", "dest", "arrival", "arriving", "target"})
_ORIGIN_CUE = re.compile(
    r"(?:\bfrom|\bout\s+of|\bleav(?:e|es|ing)(?:\s+from)?|\bdepart(?:s|ing)?(?:\s+from)?|\btak(?:e|ing)\s+off\s+from|"
    r"\bstart(?:s|ing)?\s+(?:from|in|at)|\borigin(?:\s+city)?\s+(?:is|will\s+be))\s*$",
    re.IGNORECASE,
)
_DESTINATION_CUE = re.compile(
    r"(?:\bto|\binto|\btowards?|\barriv(?:e|es|ing)\s+(?:in|at)|\bend\s+up\s+in|\bhead(?:ed|ing)?\s+(?:to|for)|"
    r"\bbound\s+for|\bdestination(?:\s+city)?\s+(?:is|will\s+be))\s*$",
    re.IGNORECASE,
)
CUED = 0.97  # a value after its own cue: above what any other reading gives (up to CUED + 0.02)


def direction_of(spec: ParameterSpec) -> Direction | None:
    """'origin' or 'destination' for a text parameter whose name says so; else None."""
    if item_type(spec) not in (ParameterType.STRING, ParameterType.ENUM):
        return None
    tokens = name_tokens(spec.name)
    origin, destination = bool(tokens & _ORIGIN_NAMES), bool(tokens & _DESTINATION_NAMES)
    if origin == destination:
        return None
    return "origin" if origin else "destination"


def cue_before(question: str, span: Span) -> Direction | None:
    """The end of a journey the words just before a value name ('from', 'arriving in'), if any."""
    head = question[max(0, span[0] - 30) : span[0]]
    if _ORIGIN_CUE.search(head):
        return "origin"
    if _DESTINATION_CUE.search(head):
        return "destination"
    return None


def directed(
    spec: ParameterSpec, question: str, candidates: list[Candidate], raise_own: bool = True
) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """The parameter's candidates read with their cue words, and what was left out: those after the other
    end's cue are dropped (and said), those a reader found after its own are raised to CUED (and marked, so
    a learned model's reading does not drop them). `raise_own` False: only the dropping (for a learned
    model's own values, which are no reader's and may be any words after 'to')."""
    direction = direction_of(spec)
    if direction is None:
        return candidates, []
    out, dropped = [], []
    for cand in candidates:
        cue = cue_before(question, cand.span) if cand.span is not None else None
        if cue is not None and cue != direction:
            reason = f"the words before it say where it goes {'from' if cue == 'origin' else 'to'}"
            dropped.append({"name": spec.name, "text": cand.text, "reason": reason})
            continue
        if cue == direction and raise_own:
            cand.score = CUED + 0.02 * min(cand.score, 1.0)  # the surer reader first among cued ones
            cand.cued = True
        out.append(cand)
    return out, dropped


def crossed(specs: list[ParameterSpec], found: dict[str, list[Candidate]], question: str) -> dict[str, list[Candidate]]:
    """Values after the cue of the other end, handed to that end when it takes any text: 'from seattle to
    chicago' when only the origins' list holds Chicago is a flight to Chicago, not one with no destination
    (`found`: each parameter's candidates by name; the result: the candidates each end gains)."""
    ends = {direction_of(spec): spec for spec in specs if direction_of(spec) is not None}
    out: dict[str, list[Candidate]] = {}
    for spec in specs:
        direction = direction_of(spec)
        for cand in found.get(spec.name, []) if direction is not None else []:
            cue = cue_before(question, cand.span) if cand.span is not None else None
            other = ends.get(cue) if cue is not None and cue != direction else None
            if other is None or closed(other) or cand.span is None:
                continue
            if any(c.span is not None and overlaps(c.span, cand.span) for c in found.get(other.name, [])):
                continue  # that end reads these words itself ('to Fresno, CA')
            gained = Candidate(other.name, cand.value, cand.span, cand.text, cand.extractor, CUED, key=cand.key)
            out.setdefault(other.name, []).append(gained)
    return out
