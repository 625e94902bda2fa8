"""What a parameter is for, read from its name and description: a year, a row limit, a lower bound...

The role decides which mentions in a question may fill it: 'top 10' fills a limit, 'over $50k'
a lower bound, 'since March' a start date. A role never changes what validation allows.
"""

from __future__ import annotations

import re
from enum import StrEnum

from ..templates import ParameterSpec, ParameterType
from .text import name_tokens


class Role(StrEnum):
    YEAR = "year"
    LIMIT = "limit"
    LOWER = "lower"  # min_price, min_salary, threshold
    UPPER = "upper"  # max_price
    IDENTIFIER = "identifier"  # order_id, order number
    START = "start"  # start_date, since_date
    END = "end"  # end_date
    POINT = "point"  # on_date
    EMAIL = "email"
    NAME = "name"
    GENERIC = "generic"


_LIMIT_NAMES = {"limit", "top", "top_n", "n", "k", "max_results", "size", "count", "rows", "page_size"}


def role_of(spec: ParameterSpec) -> Role:
    name = spec.name.lower()
    tokens = name_tokens(name)
    desc = spec.description.lower()
    kind = spec.item_type if spec.type is ParameterType.ARRAY and spec.item_type else spec.type
    if kind in (ParameterType.INTEGER, ParameterType.NUMBER):
        if "year" in tokens or name.endswith("year"):
            return Role.YEAR
        if name in _LIMIT_NAMES or re.match(r"(how many|maximum number of|number of (rows|results))", desc):
            return Role.LIMIT
        if tokens & {"id", "no", "number", "nr"} or "number" in desc.split()[:2]:
            return Role.IDENTIFIER
        if tokens & {"min", "minimum", "from", "above", "over", "threshold", "floor", "least", "lowest"} or re.search(
            r"\b(threshold|lowest|at least|minimum)\b", desc
        ):
            return Role.LOWER
        if tokens & {"max", "maximum", "to", "below", "under", "ceiling", "most", "highest"} or re.search(
            r"\b(highest|at most|maximum|ceiling)\b", desc
        ):
            return Role.UPPER
        return Role.GENERIC
    if kind in (ParameterType.DATE, ParameterType.DATETIME):
        if tokens & {"start", "from", "since", "begin", "after", "earliest", "first"}:
            return Role.START
        if tokens & {"end", "to", "until", "till", "before", "latest", "last"}:
            return Role.END
        if re.search(r"\b(earliest|on or after|starting)\b", desc):
            return Role.START
        if re.search(r"\b(latest|on or before|ending)\b", desc):
            return Role.END
        return Role.POINT
    if kind is ParameterType.STRING:
        if "email" in tokens or "email" in desc:
            return Role.EMAIL
        if tokens & {"name", "customer", "client", "employee", "manager", "person", "product", "company"} or re.search(
            r"\bname\b", desc
        ):
            return Role.NAME
    return Role.GENERIC
