"""The verbs that ask to change data, and the forms a template text may use them in.

Two rules read them. The router refuses a question that asks a template to do what its texts never do
("delete all employees" is not answered by "list terminated employees": routing/write_requests.py); there a
template does a change when its texts use a verb of the same kind in a form that does it (`same_kind`,
`acting_forms`). The tune generates out-of-scope anchors from them (tune/anchors.py) and leaves out a verb
that any template's text uses in any of its forms ("cancel my order", "orders cancelled last week").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Write verbs and every form of each that a template text may contain.
WRITE_VERBS: dict[str, tuple[str, ...]] = {
    "delete": ("deletes", "deleted", "deleting", "deletion", "deletions"),
    "drop": ("drops", "dropped", "dropping"),
    "remove": ("removes", "removed", "removing", "removal", "removals"),
    "update": ("updates", "updated", "updating"),
    "insert": ("inserts", "inserted", "inserting", "insertion", "insertions"),
    "truncate": ("truncates", "truncated", "truncating", "truncation"),
    "erase": ("erases", "erased", "erasing", "erasure"),
    "wipe": ("wipes", "wiped", "wiping"),
    "purge": ("purges", "purged", "purging"),
    "overwrite": ("overwrites", "overwrote", "overwritten", "overwriting"),
    "modify": ("modifies", "modified", "modifying", "modification", "modifications"),
    "rename": ("renames", "renamed", "renaming"),
    "create": ("creates", "created", "creating", "creation"),
    "add": ("adds", "added", "adding", "addition", "additions"),
    "cancel": ("cancels", "cancelled", "canceled", "cancelling", "canceling", "cancellation", "cancellations"),
    "edit": ("edits", "edited", "editing"),
    "change": ("changes", "changed", "changing"),
    "destroy": ("destroys", "destroyed", "destroying", "destruction"),
    "archive": ("archives", "archived", "archiving"),
}
WRITE_FORMS = frozenset(WRITE_VERBS).union(*WRITE_VERBS.values())
# Verbs that ask for an action on a record ("approve Emily's leave request", "promote Priya", "raise Robert's
# salary"): the router refuses them like the write verbs; the tune does not write anchors with them (its
# anchors were measured with the write verbs alone). Not here: verbs a support or booking service is asked in
# questions too ("transfer", "reset", "set up", "book"), and "give" ("give me ...") and "mark" (a name).
ACTION_VERBS: dict[str, tuple[str, ...]] = {
    "approve": ("approves", "approved", "approving", "approval", "approvals"),
    "grant": ("grants", "granted", "granting"),
    "reject": ("rejects", "rejected", "rejecting", "rejection", "rejections"),
    "deny": ("denies", "denied", "denying", "denial", "denials"),
    "revoke": ("revokes", "revoked", "revoking"),
    "assign": ("assigns", "assigned", "assigning", "assignment", "assignments"),
    "reassign": ("reassigns", "reassigned", "reassigning"),
    "promote": ("promotes", "promoted", "promoting", "promotion", "promotions"),
    "demote": ("demotes", "demoted", "demoting", "demotion", "demotions"),
    "terminate": ("terminates", "terminated", "terminating", "termination", "terminations"),
    "fire": ("fires", "fired", "firing"),
    "dismiss": ("dismisses", "dismissed", "dismissing", "dismissal", "dismissals"),
    "increase": ("increases", "increased", "increasing"),
    "decrease": ("decreases", "decreased", "decreasing"),
    "raise": ("raises", "raised", "raising"),
    "reduce": ("reduces", "reduced", "reducing", "reduction", "reductions"),
}
ALL_FORMS = {**WRITE_VERBS, **ACTION_VERBS}
# Verbs that ask for data: the tune replaces a template text's leading one with a write verb (tune/anchors.py);
# a clause with one is a read, whatever write verb it starts with ("drop Marketing and show Sales").
READ_VERBS = frozenset(
    [
        "list",
        "show",
        "display",
        "get",
        "give",
        "find",
        "fetch",
        "count",
        "look",
        "pull",
        "tell",
        "retrieve",
        "return",
        "report",
        "view",
        "print",
        "compare",
        "summarise",
        "summarize",
        "search",
        "lookup",
    ]
)

# verbs that ask for the same kind of change: a template whose texts use one ("delete my account") carries
# out requests phrased with another ("remove my account")
KINDS: dict[str, tuple[str, ...]] = {
    "removal": ("delete", "remove", "erase", "wipe", "purge", "destroy", "drop", "truncate"),
    "cancellation": ("cancel",),
    "change": ("update", "modify", "edit", "change", "overwrite", "rename"),
    "addition": ("insert", "add", "create"),
    "archiving": ("archive",),
    "dismissal": ("terminate", "fire", "dismiss"),
    "approval": ("approve", "grant"),
    "rejection": ("reject", "deny", "revoke"),
    "assignment": ("assign", "reassign"),
    "promotion": ("promote", "demote"),
    "adjustment": ("increase", "decrease", "raise", "reduce"),
}
KIND_OF = {verb: kind for kind, verbs in KINDS.items() for verb in verbs}
assert set(KIND_OF) == set(ALL_FORMS), "every write or action verb has exactly one kind"
WORD = re.compile(r"[a-z']+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def same_kind(verb: str) -> tuple[str, ...]:
    """The write verbs that ask for the same kind of change as `verb` (itself included)."""
    return KINDS[KIND_OF[verb]]


def acting_forms(verb: str) -> frozenset[str]:
    """The forms that do the verb ("cancel", "cancelling"), not those that describe it done or name it as a thing
    ("cancelled orders", "cancellation requests", "recent updates"): listing cancelled orders cancels none."""
    return frozenset({verb} | {f for f in ALL_FORMS[verb] if f.endswith("ing")})


def verbs_used(texts: Iterable[str]) -> set[str]:
    """The write verbs `texts` use in any of their forms."""
    used = {w for text in texts for w in words(text)}
    return {verb for verb, forms in WRITE_VERBS.items() if verb in used or used.intersection(forms)}
