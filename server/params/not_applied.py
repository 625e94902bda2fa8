"""Values a question names that its template cannot take: reported, not silently dropped.

"Who is the highest paid person in Sales?" routed to a company-wide ranking (no department parameter) was
answered for the whole company without a word, and read as the answer for Sales. A value is reported when
it is, as whole words in any case, one of the `allowed_values` or `aliases` of a parameter that another
template of the same adapter has and this template lacks (by name); when it overlaps nothing the extraction
used; when it is not an ordinary word of this template's own examples ("music" in "play some music"); and
when it is not part of another place's name ('South' of 'South Africa': strings.py `in_a_longer_place`).
It goes into `extraction_left_out` and a line of the answer's content says it was not applied. Only the
operator's own short lists count: `values_from` lists (names read from a database), numbers, booleans and
values shorter than three characters name things too loosely to be sure of. The end of a number range
the template has no bound for ('between 100k and 150k', a minimum only) is reported the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..templates import ParameterType, Template
from .candidates import item_type
from .choice_cache import ordinary_words
from .numbers import find_numbers
from .roles import Role, role_of
from .ruled_out import REASON as RULED_OUT
from .strings import in_a_longer_place
from .text import Span, overlaps, words

MIN_CHARS = 3
NOT_APPLIED = "not applied"  # how these entries of extraction_left_out begin (`note` finds them by it)
WIDENED = "widened to the whole year"  # a year parameter filled from a shorter period ('Q2 2024')
_NAMED_KINDS = (ParameterType.STRING, ParameterType.ENUM)


@dataclass(frozen=True)
class ListedValue:
    """One value (or alias) of a parameter's closed list, and how it is found in a question."""

    parameter: str
    text: str
    pattern: re.Pattern[str]


def listed_values(templates: Iterable[Template]) -> tuple[ListedValue, ...]:
    """Every template's closed-list values that may name something (see the module docstring), once each."""
    seen: set[tuple[str, str]] = set()
    out: list[ListedValue] = []
    for template in templates:
        for spec in template.parameters:
            if item_type(spec) not in _NAMED_KINDS:
                continue
            for text in [*(str(v) for v in spec.allowed_values or ()), *spec.aliases]:
                key = (spec.name, text.casefold())
                if len(text) < MIN_CHARS or not any(c.isalpha() for c in text) or key in seen:
                    continue
                seen.add(key)
                pattern = re.compile(rf"(?<![\w-]){re.escape(text)}(?![\w-])", re.IGNORECASE)
                out.append(ListedValue(spec.name, text, pattern))
    return tuple(out)


def not_applied(
    question: str, template: Template, listed: Sequence[ListedValue], used: Iterable[Span]
) -> list[dict[str, object]]:
    """`extraction_left_out` entries for the values of parameters this template lacks (one per parameter)."""
    own = {p.name for p in template.parameters}
    taken = list(used)
    ordinary: frozenset[str] | None = None
    out: list[dict[str, object]] = []
    reported: set[str] = set()
    for value in listed:
        if value.parameter in own or value.parameter in reported:
            continue
        found = value.pattern.search(question)
        if found is None or any(overlaps(found.span(), span) for span in taken):
            continue
        if ordinary is None:
            ordinary = ordinary_words(template) | {w.lower for w in words(template.description)}
        if all(w.lower in ordinary for w in words(found.group())):
            continue
        if in_a_longer_place(question, found.span(), ordinary):
            continue
        reported.add(value.parameter)
        taken.append(found.span())
        reason = f"{NOT_APPLIED}: template '{template.id}' has no parameter '{value.parameter}'"
        out.append({"name": value.parameter, "text": found.group(), "reason": reason, "span": list(found.span())})
    return out


def unbounded_ends(template: Template, question: str, used: Iterable[Span]) -> list[dict[str, object]]:
    """`extraction_left_out` entries for the end of a number range the template has no bound for: 'between
    100k and 150k' on a template with a minimum only ran with the minimum, and the answer must say so; so is
    a bound said alone the other way ('how many make under 50k' asked for a minimum without a word, and the
    reply '50k' counted those above it). Only a template with one bound and not the other can leave an end
    out (the question is read for numbers then)."""
    roles = {role_of(spec) for spec in template.parameters}
    if (Role.LOWER in roles) == (Role.UPPER in roles):
        return []
    mentions = find_numbers(question)
    taken = list(used)
    out: list[dict[str, object]] = []
    for m in mentions:
        if m.year_like or any(overlaps(m.span, span) for span in taken):
            continue  # years have their own reader (a period of several years asks which one)
        if m.range_role is None:  # one bound alone, the other way: 'under 50k' where only a minimum is taken
            if m.cmp is None or m.time_unit or m.ordinal or not (m.currency or m.multiplied or m.value >= 1000):
                continue  # an amount, not 'under 2 reviews' or 'up to 3 departments'
            missing, name = (Role.UPPER, "maximum") if m.cmp in ("lt", "lte") else (Role.LOWER, "minimum")
            if missing not in roles:
                reason = f"{NOT_APPLIED}: template '{template.id}' has no {name}"
                out.append({"name": name, "text": m.text, "reason": reason, "span": list(m.span)})
            continue
        missing, name = (Role.UPPER, "maximum") if m.range_role == "high" else (Role.LOWER, "minimum")
        other = next((o for o in mentions if o.range_id == m.range_id and o is not m), None)
        if missing in roles or other is None or not any(overlaps(other.span, span) for span in taken):
            continue
        reason = f"{NOT_APPLIED}: template '{template.id}' has no {name}"
        out.append({"name": name, "text": m.text, "reason": reason, "span": list(m.span)})
    return out


# each kind of entry `note` writes a line for, and why it was not applied (found by its reason's beginning)
_WHY_NOT = (
    (NOT_APPLIED, "this query has no such filter, so the rows are not limited by it"),
    (RULED_OUT, "the question rules it out, and this query can only match a value, not leave one out"),
)


def note(left_out: Iterable[dict[str, object]]) -> str | None:
    """The lines an answer's content adds for what it did not apply (a filter the query lacks, a value the
    question rules out, a period widened to its year), or None."""
    entries = list(left_out)
    lines = []
    for reason, why in _WHY_NOT:
        named = [f"'{e['text']}' ({e['name']})" for e in entries if str(e.get("reason", "")).startswith(reason)]
        if named:
            lines.append(f"Not applied: {', '.join(named)}: {why}.")
    lines += [
        f"Widened: '{e['text']}' ({e['name']}): this query takes a whole year, so the answer covers all of it."
        for e in entries
        if str(e.get("reason", "")).startswith(WIDENED)
    ]
    return "\n".join(lines) or None
