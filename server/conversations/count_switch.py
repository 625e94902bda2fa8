"""'how many?' after a list, 'list them' after a count: the last answer's values, asked the other way round.

A message that asks only for the number of the last list's rows ("how many?", "how many is that?", "and
how many are there in total?", "count them") runs the template that counts that list (`counts:`) with the
last answer's values; without one, the list again, which then answers with its total when its rows were
cut (service/row_totals.py: the message asks "how many"). A message that asks only for the rows a count
counted ("list them", "who are they?", "show me those") runs the list the count template counts. A message
with any other word is read as any follow-up is (carry_over.py), on the count of the last list when it asks
"how many" ("how many in Sales?" after a list of Engineering), as a question of its own would be
(routing/count_questions.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..params.text import wordset
from ..routing.count_questions import count_cue, count_template_for
from ..templates import Template
from .bare_reply import reply_words

# the words a message asking only "how many?" of the last list may hold
_COUNT_ONLY = wordset(
    "how many count number of is that are there those these them they it in total all altogether overall "
    "and so ok okay then now what what's whats s was were the please "
    "people persons rows results"  # 'how many people is that?' ('items' are an order's, not the list's)
)
# the words a message asking only for the rows of the last count may hold, and those that ask for the rows
_LIST_ONLY = wordset(
    "list show display give see me them they those these who are were which ones one the names name all rows "
    "and so ok okay then now please can could you would i want to let us lets"
)
_ASKS_FOR_ROWS = wordset("list show display give see who which names")


def switched(message: str, template: Template, templates: Mapping[str, Template]) -> Template | None:
    """The template that answers the message about the last answer's `template` the other way round (its
    count, or the list it counts), or None when the message asks something else."""
    said = set(reply_words(message.casefold()))
    if not said:
        return None
    if template.counts is None and count_cue(message) is not None and said <= _COUNT_ONLY:
        return count_template_for(template, templates) or template
    if template.counts is not None and said <= _LIST_ONLY and said & _ASKS_FOR_ROWS:
        return templates.get(template.counts)
    return None


def counted_if_asked(message: str, template: Template, templates: Mapping[str, Template]) -> Template:
    """The template that counts the last list when the follow-up asks for a number; else the list itself."""
    if template.counts is None and count_cue(message) is not None:
        return count_template_for(template, templates) or template
    return template


def counted_like(message: str, last: Template, template: Template, templates: Mapping[str, Template]) -> Template:
    """Another template than the last answer's, asked the way the last one was: after a count ('how many
    customers are in the West?', then 'what about Germany?') the count of a list, not its rows; unless the
    message asks for the rows ('and which customers are in Germany?')."""
    said = set(reply_words(message.casefold()))
    if last.counts is not None and template.counts is None and not said & _ASKS_FOR_ROWS:
        return count_template_for(template, templates) or template
    return template
