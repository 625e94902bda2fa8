"""A question that asks for one end of a ranking is not answered by a template that ranks from the other end:
the one rule.

"who has the lowest salary?" reads, to the embedding and the intent model, much like "who are the top
earners?": the same object, an adjective that weighs little. The top earners' template wins with a confident
score and answers with the highest paid, the opposite of what was asked. A template says which end it ranks
from in its id or description ("top_earners", "The highest-paid employees", "cheapest first"); a question
says which end it asks for ("lowest", "least", "fewest", "cheapest", "bottom", "worst"). When they name
opposite ends, and the template's id and description never name the question's end, the candidate is taken
out of the ranking before the decision, as a write request's are (write_requests.py): the next candidate
answers if it clears the threshold (a listing that ranks nothing, "revenue by category", holds the lowest too),
else nothing runs and the answer says why. "best" is left out (the best price is the lowest), and so are
phrases that rank nothing: "at most", "at least", "most recent", "top up", "bottom line", "worst case",
"last but not least". Only amounts are read: a list ordered newest first, asked for the oldest, still holds
them when its rows are not cut, where the top ten earners never hold the lowest paid.

The rule runs in the router's one ending (`Router._decide`), so /v1/query, test_routing (which says so in
`routing_decision.ranking_end`), fan-out and fit-thresholds all see the same choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..templates import Template
from .candidates import Candidate
from .decision import clears

_HIGH = frozenset(("highest", "most", "top", "largest", "biggest", "greatest", "richest", "priciest"))
_LOW = frozenset(("lowest", "least", "fewest", "smallest", "cheapest", "bottom", "worst", "poorest"))
# phrases whose words rank nothing: a bound, a time, "top up", idioms
_NO_END = re.compile(
    r"\b(?:at\s+(?:the\s+)?(?:very\s+)?(?:most|least)|(?:most|least)\s+recent(?:ly)?|top\s+(?:up\w*|notch|level)|"
    r"on\s+top\s+of|bottom\s+line|worst\s+case|last\s+but\s+not\s+least|not\s+in\s+the\s+least|"
    r"for\s+the\s+most\s+part|most\s+of\s+all)\b"
)
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class RankingEnd:
    """The rule applied: the end the question asks for, the candidates it took out (best first), and whether
    the best of them would have run (it was ranked first and cleared the threshold)."""

    asked: str  # "highest" or "lowest"
    refused: list[str]  # "adapter/template_id"
    would_have_run: bool = False


def ends(text: str) -> set[str]:
    """The ends of a ranking a text names: "highest", "lowest", both or none."""
    said = set(_WORD.findall(_NO_END.sub(" ", text.lower().replace("_", " ").replace("-", " "))))
    return {end for end, words in (("highest", _HIGH), ("lowest", _LOW)) if said & words}


def asked_end(question: str) -> str | None:
    """The one end the question asks for; None when it names none, or both."""
    named = ends(question)
    return next(iter(named)) if len(named) == 1 else None


def ranks_from_the_other_end(template: Template, asked: str) -> bool:
    """The template's id or description names the other end, and never the asked one."""
    return ends(f"{template.id} {template.description}") == {"lowest" if asked == "highest" else "highest"}


def refuse_other_end(
    question: str, ranked: list[Candidate], threshold: float
) -> tuple[list[Candidate], RankingEnd | None]:
    """`ranked` without the candidates that rank from the other end; unchanged and None when the question
    asks for no end, or no candidate ranks from the other one."""
    asked = asked_end(question)
    if asked is None:
        return ranked, None
    refused = [c for c in ranked if ranks_from_the_other_end(c.template, asked)]
    if not refused:
        return ranked, None
    kept = [c for c in ranked if c not in refused]
    would_have_run = refused[0] is ranked[0] and clears(ranked[0].score, threshold)
    return kept, RankingEnd(asked, [f"{c.adapter}/{c.template.id}" for c in refused], would_have_run)
