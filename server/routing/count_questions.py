"""Count questions get counts: the one rule that picks a count template over the list it counts.

"How many employees earn more than 80000?" reads, to the embedding and the intent model, much like
"who earns more than 80000?": both land on the list template, which answers with its first 100 rows,
and an assistant then says "100". A template that counts a list declares it (`counts: <list id>`, same
adapter; checked at load by templates/library.py `count_pair_issues`). After ranking, when the question
asks for a number ("how many", "number of", "count", "headcount") and the best candidate is a list that
a count template counts, the count template takes its place, with the list's scores: the decision
(threshold, ambiguity) is the one the list earned, only the template that answers it changes. The
count template's own entry, if it was a candidate too, is dropped, so the pair is never "ambiguous".
The same rule runs the other way for a question that asks for the rows ("list", "show all", "give me 5",
"show me the first 20") and no number, when the best candidate is a count template: "list the first 20
pending orders" is answered by the list the count template counts, not by "orders: 188".

The rule runs in the router's one ending (`Router._decide`), so /v1/query, test_routing (which says so
in `routing_decision.count_question`) and fit-thresholds all see the same choice. Without a cue either
way the scores decide: "how big is the team?" asks for a count without any cue word.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..templates import Template
from .candidates import Candidate

# the words that ask for a number of rows rather than the rows themselves
COUNT_CUE = re.compile(r"\b(how many|number of|count|headcount)\b", re.IGNORECASE)
# the words that ask for the rows themselves: 'list', or 'show' / 'give me' / 'display' with how many rows
# ('show all', 'give me 5', 'show me the first 20'); not 'show me how big the team is' nor 'give me the total'
LIST_CUE = re.compile(
    r"\b(list|(?:show|give|display)(?:\s+(?:me|us))?\s+(?:all|every|the\s+(?:first|last)|\d+))\b", re.IGNORECASE
)


class CountSource(Protocol):
    """What the rule reads of a source: its name and its templates."""

    @property
    def name(self) -> str: ...

    @property
    def templates(self) -> Mapping[str, Template]: ...


@dataclass(frozen=True)
class CountChoice:
    """The rule applied: which words asked for a count, the list the question routed to, the count that answers."""

    cue: str
    adapter: str
    list_template: str
    count_template: str
    answered_by: str = "count"  # "list": a question for the rows that routed to the count template


def count_cue(question: str) -> str | None:
    """The words of the question that ask for a number ("how many", ...), or None."""
    found = COUNT_CUE.search(question)
    return found.group(1).lower() if found else None


def count_template_for(listed: Template, templates: Mapping[str, Template]) -> Template | None:
    """The template of the same source that counts this list, if one does."""
    return next((t for t in templates.values() if t.counts == listed.id), None)


def prefer_count_template(
    question: str, ranked: list[Candidate], sources: Sequence[CountSource]
) -> tuple[list[Candidate], CountChoice | None]:
    """`ranked` with its best candidate replaced by the count template that counts it, when the question
    asks for a count, or by the list a count template counts, when it asks for the rows and no count; else
    `ranked` unchanged and None."""
    if not ranked:
        return ranked, None
    best = ranked[0]
    source = next((s for s in sources if s.name == best.adapter), None)
    if source is None:
        return ranked, None
    if (cue := count_cue(question)) is not None:
        counting = count_template_for(best.template, source.templates)
        if counting is None:
            return ranked, None
        return _replaced(ranked, counting), CountChoice(cue, best.adapter, best.template.id, counting.id)
    listed = source.templates.get(best.template.counts) if best.template.counts else None
    if listed is None or (found := LIST_CUE.search(question)) is None:
        return ranked, None
    choice = CountChoice(found.group(1).lower(), best.adapter, listed.id, best.template.id, answered_by="list")
    return _replaced(ranked, listed), choice


def _replaced(ranked: list[Candidate], template: Template) -> list[Candidate]:
    """The best candidate answered by `template` with its scores; `template`'s own entry dropped."""
    chosen = dataclasses.replace(ranked[0], template=template)
    return [chosen, *(c for c in ranked[1:] if c.key != chosen.key)]
