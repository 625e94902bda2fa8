"""'show all of them', 'the rest', 'show me all 84': more rows of the last answer, not a new question.

After a list cut at its limit ("the first 50 of 84 rows"), such a message reads like no template at all:
it went to a template that takes a number ("show me all 84" ran order 84) or asked for the department
again. It is the last answer once more, every value kept, with its row limit raised: to the number said,
else to the most the template allows (`max` of its limit parameter). A number above that maximum is asked
about like any other invalid value. A template without a limit parameter, or without a maximum when no
number is said, has no more rows to give this way.
"""

from __future__ import annotations

import re

from ..params.roles import Role, role_of
from ..templates import ParameterSpec, Template

_MORE_ROWS = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|and|now|then|please|so)\W+)*"
    r"(?:(?:can|could|would)\s+(?:you|i)\s+)?(?:(?:show|list|give|get|see|display|send)\s+(?:me\s+|us\s+)?)?"
    r"(?:(?:all|every\s+one|everything|the\s+rest|the\s+remaining(?:\s+ones)?|the\s+others?|the\s+other\s+ones|"
    r"more|them\s+all)(?:\s+(?:of\s+)?(?:them|those|these|it))?)"
    r"(?:\s+(?P<n>\d{1,6}))?(?:\s+(?:of\s+them|rows|results|ones|please|then|too))*\W*$",
    re.IGNORECASE,
)


def limit_spec(template: Template) -> ParameterSpec | None:
    return next((p for p in template.parameters if role_of(p) is Role.LIMIT), None)


def more_rows(message: str, template: Template) -> tuple[ParameterSpec, int] | None:
    """(the limit parameter, the limit asked for) when the message asks for more rows of `template`'s last
    answer, else None."""
    said = _MORE_ROWS.match(message.strip())
    spec = limit_spec(template)
    if said is None or spec is None:
        return None
    if said["n"]:
        return spec, int(said["n"])
    if spec.max is None:
        return None
    return spec, int(spec.max)
