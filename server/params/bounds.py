"""A bound said one way and queried another: the value that makes the query mean what the words said.

"products cheaper than $49" against `price BETWEEN :min_price AND :max_price` listed the products at exactly
49, and "how many earn 100000 or more" against `salary > :min_salary` left out those at exactly 100,000.
The template's SQL says how it compares each parameter (`price <= :max_price`, `:max_price > price`,
`BETWEEN :min_price AND :max_price`); the question's words say how the user does ('more than' is strict,
'at least', 'or more', 'up to' and 'between' are not). Where they differ, an integer moves by one and any
other number to the next representable value past it (`math.nextafter`): `max_price` 48.99999999999999
keeps 48.99 and leaves out 49.00. A parameter the SQL compares more than one way, or not at all, and
bodies other than SQL are left as said.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..templates import ParameterSpec, ParameterType, Template
from .choice_cache import per_template

_OPS = {"<": "lt", "<=": "lte", ">": "gt", ">=": "gte"}
_FLIPPED = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}  # ':p < price' is 'price > :p'
_UPPER = frozenset({"lt", "lte"})
# (said, queried) pairs where the value moves down: '< 49' queried '<= p', '>= 100000' queried '> p'
_BELOW = frozenset({("lt", "lte"), ("gte", "gt")})


# strings and comments in one pass from the left: a '--' inside a string is no comment, an apostrophe inside a
# comment ('-- the customer's orders') opens no string
_QUOTED_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.DOTALL)


@per_template
def compared(template: Template) -> dict[str, str]:
    """How the template's SQL compares each parameter: column `lt` / `lte` / `gt` / `gte` the parameter. Not a
    parameter the SQL casts (a cast to the column's scale would undo a move past the bound), nor one `NOT
    BETWEEN` or another operator ('<>', '=>') compares."""
    body = template.body
    if template.body_key != "sql" or not isinstance(body, str):
        return {}
    body = _QUOTED_OR_COMMENT.sub(lambda m: "''" if m.group().startswith("'") else " ", body)
    out: dict[str, str] = {}
    for spec in template.parameters:
        param = rf"(?:(?<![:\w]):|\$){re.escape(spec.name)}(?!\w)"  # ':p' as written, '$p' as DuckDB runs it
        if re.search(rf"{param}\s*::|\bCAST\s*\(\s*{param}|\bNOT\s+BETWEEN\s+(?:\S+\s+AND\s+)?{param}", body, re.I):
            continue
        op = r"(?<![<>=!-])(<=|>=|<|>)(?![<>=])"
        ops = {_OPS[m[1]] for m in re.finditer(rf"{op}\s*{param}", body)}
        ops |= {_FLIPPED[_OPS[m[1]]] for m in re.finditer(rf"{param}\s*{op}", body)}
        if re.search(rf"\bBETWEEN\s+{param}\s+AND\b", body, re.IGNORECASE):
            ops.add("gte")
        if re.search(rf"\bBETWEEN\s+\S+\s+AND\s+{param}", body, re.IGNORECASE):
            ops.add("lte")
        if len(ops) == 1:
            out[spec.name] = ops.pop()
    return out


def as_queried(spec: ParameterSpec, queried: str | None, value: Any, said: str | None) -> Any:
    """`value` moved so that the query's comparison of the parameter (`queried`, from `compared`) means the
    one the words said (`said`: 'gt', 'gte', 'lt', 'lte')."""
    if said is None or queried is None or said == queried or (said in _UPPER) != (queried in _UPPER):
        return value
    if spec.type not in (ParameterType.INTEGER, ParameterType.NUMBER) or isinstance(value, bool):
        return value
    down = (said, queried) in _BELOW
    if spec.type is ParameterType.INTEGER:
        moved = value - 1 if down else value + 1
    else:
        moved = math.nextafter(float(value), -math.inf if down else math.inf)
    if (spec.min is not None and moved < spec.min) or (spec.max is not None and moved > spec.max):
        return value  # 'earning 0 or more' with `min: 0`: the bound as said, not past what the parameter allows
    return moved
