"""Requests to change data are not answered by templates that only read: the one rule.

"delete all employees" reads, to the embedding and the intent model, much like "list terminated employees":
the object is the same and the verb weighs little, so the read template wins with a confident score, runs, and
a chat assistant reports that the command "executed". A question that starts (or has a clause that starts)
with a write verb in the imperative ("delete ...", "please drop ...", "can you cancel ...", "'; DELETE FROM
...") asks for a change. Such a question is routed only to templates whose own texts (id, description,
examples) use that verb, or one of the same kind ("delete" for "remove"), in a form that does it ("cancel",
"cancelling"; not "cancelled orders", which lists them): an operator's "cancel an order" template
(an HTTP POST) still answers "cancel order 42", and a "delete my account" template "remove my account". Every
other candidate is taken out of the ranking, so nothing that merely resembles the request runs; when none is
left the decision says why (`asks_to_change_data`), and in a session such a message is never read as a
follow-up of the last answer.

A verb followed by a noun-making word ("drop in sales", "cancel rate", "Update: ..."), a clause that edits the
answer ("remove the date filter") or also asks for a read ("drop Marketing and show Sales"), and "cancel that"
are not requests. Only the verbs that, at the head of a request to a data service, ask for a change are read
this way, with those that ask for an action on a record ("approve Emily's leave request", "promote Priya",
"raise Robert's salary": write_verbs.py `ACTION_VERBS`); "add", "create", "change", "edit" and "modify" are
left out: "change it to Sales" and "add Marketing" continue a conversation, "create a report of sales by
region" asks for a read.

The rule runs in the router's one ending (`Router._decide`), so /v1/query, test_routing (which says so in
`routing_decision.write_request`), fan-out and fit-thresholds all see the same choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..templates import Template
from ..templates.write_verbs import ACTION_VERBS, ALL_FORMS, READ_VERBS, acting_forms, same_kind, words
from .candidates import Candidate

REQUEST_VERBS = frozenset(
    [
        *("delete", "drop", "remove", "erase", "wipe", "purge", "truncate", "insert", "overwrite", "destroy"),
        *("cancel", "update", "archive", "rename"),
        *ACTION_VERBS,
    ]
)
assert set(ALL_FORMS) >= REQUEST_VERBS
# words before the verb that keep it a request ("please delete", "can you drop", "i want to cancel")
LEAD_INS = (
    ("please",),
    ("kindly",),
    ("just",),
    ("now",),
    ("then",),
    ("and",),
    ("also",),
    ("ok",),
    ("okay",),
    ("hey",),
    ("hi",),
    ("go", "ahead", "and"),
    ("can", "you"),
    ("could", "you"),
    ("would", "you"),
    ("will", "you"),
    ("can", "u"),
    ("i", "want", "to"),
    ("i", "want", "you", "to"),
    ("i'd", "like", "to"),
    ("i", "would", "like", "to"),
    ("i", "need", "to"),
    ("i", "need", "you", "to"),
    ("we", "need", "to"),
    ("we", "want", "to"),
    ("let's",),
    ("lets",),
    ("let", "us"),
    ("help", "me"),
    ("you", "should"),
    ("try", "to"),
)
# a word right after the verb that makes the verb a noun ("drop in sales", "cancel rate", "update status of
# order 42", "drop off location") or a read ("update me on sales")
NOT_A_REQUEST_AFTER = frozenset(
    [
        *("on", "about", "of", "off", "me", "us", "in", "rate", "rates", "ratio", "status", "history", "log", "logs"),
        *("frequency", "size", "date", "dates", "count", "counts", "requests", "reasons", "shipping", "trend"),
        *("trends", "volume", "percentage", "time", "times", "policy", "fee", "fees", "amount", "amounts"),
        # a change said as a noun: "increase by region", "decrease over time"
        *("by", "per", "over", "across", "since", "between", "vs", "versus"),
    ]
)
# words of the question's own query that a clause may drop or remove: an edit of the answer, not of the data
# ("remove the date filter", "drop the filter", "remove duplicates from the customer list")
QUERY_PARTS = frozenset(
    [
        *("filter", "filters", "column", "columns", "duplicate", "duplicates", "limit", "sort", "sorting"),
        *("condition", "conditions", "criteria", "grouping"),
    ]
)
NEVER_MIND = frozenset(["that", "this", "it"])  # "cancel that": the conversation, not a record
# nouns after which a write verb is a noun, that an action verb takes as its object ("approve requests from Emily")
ACTION_OBJECTS = frozenset(["requests", "time"])
# verbs that change an amount: with "it" ("raise it to 200000") or a new value ("decrease the year to 2023") they
# edit the last answer in a conversation; with an object and "by" ("raise Robert's salary by 10%") they ask
ADJUSTMENTS = frozenset(same_kind("increase"))
CLAUSE = re.compile(r"[.;!?\n]+|,?\s+(?:and\s+)?then\s+|,\s+")


@dataclass(frozen=True)
class WriteRequest:
    """The rule applied: the verb the question asks to carry out, and the candidates it took out (best first)."""

    verb: str
    refused: list[str]  # "adapter/template_id"


def asked_verb(question: str) -> str | None:
    """The write verb a clause of the question starts with as a request, or None."""
    for clause in CLAUSE.split(question):
        verb = _request_in(clause)
        if verb is not None:
            return verb
    return None


def _request_in(clause: str) -> str | None:
    tokens = words(clause)
    stripped = True
    while tokens and stripped:
        stripped = False
        for lead in LEAD_INS:
            if tuple(tokens[: len(lead)]) == lead:
                tokens, stripped = tokens[len(lead) :], True
                break
    if len(tokens) < 2 or tokens[0] not in REQUEST_VERBS:
        return None
    verb, rest = tokens[0], tokens[1:]
    if rest[0] in NOT_A_REQUEST_AFTER and not (verb in ACTION_VERBS and rest[0] in ACTION_OBJECTS):
        return None
    if verb in ADJUSTMENTS and (rest[0] in NEVER_MIND or "to" in rest):  # "raise it to 200000": an edit of the answer
        return None
    if re.search(rf"\b{verb}\s*[:\-–—]", clause, re.IGNORECASE):  # "Update: how many orders today?"
        return None
    if verb == "cancel" and set(rest) <= NEVER_MIND:
        return None
    if QUERY_PARTS.intersection(rest) or READ_VERBS.intersection(rest):  # an edit of the answer, or a read
        return None
    return verb


def does(template: Template, verb: str) -> bool:
    """Whether the template's own texts use the verb, or one asking for the same kind of change ("delete" for
    "remove"), in a form that does it (write_verbs.py `acting_forms`)."""
    used = {
        w for text in (template.id.replace("_", " "), template.description, *template.nl_examples) for w in words(text)
    }
    return any(not used.isdisjoint(acting_forms(kin)) for kin in same_kind(verb))


def refuse_write_requests(question: str, ranked: list[Candidate]) -> tuple[list[Candidate], WriteRequest | None]:
    """`ranked` without the candidates that cannot carry out the change the question asks for, and what was
    refused; `ranked` unchanged and None when the question asks for no change."""
    verb = asked_verb(question)
    if verb is None:
        return ranked, None
    kept: list[Candidate] = []
    refused: list[str] = []
    for candidate in ranked:
        if does(candidate.template, verb):
            kept.append(candidate)
        else:
            refused.append(f"{candidate.adapter}/{candidate.template.id}")
    return kept, WriteRequest(verb, refused)
