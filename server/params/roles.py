"""What a parameter is for, read from its name and description: a year, a row limit, a lower bound...

The role decides which mentions in a question may fill it: 'top 10' fills a limit, 'over $50k'
a lower bound, 'since March' a start date. A role never changes what validation allows.
"""

from __future__ import annotations

import re
from enum import StrEnum

from ..templates import ParameterSpec, ParameterType
from .numbers import COUNTED
from .text import name_tokens, name_words, stem


class Role(StrEnum):
    YEAR = "year"
    LIMIT = "limit"
    LOWER = "lower"  # min_price, min_salary, threshold
    UPPER = "upper"  # max_price
    IDENTIFIER = "identifier"  # order_id, order number
    QUANTITY = "quantity"  # number_of_seats, party_size, travelers: how many people, rooms, tickets, ...
    START = "start"  # start_date, since_date, earliest_time
    END = "end"  # end_date, until_time
    POINT = "point"  # on_date, pickup_time
    EMAIL = "email"
    NAME = "name"
    GENERIC = "generic"


_LIMIT_NAMES = {"limit", "top", "top_n", "n", "k", "max_results", "size", "count", "rows", "page_size"}
_LOWER_WORDS = {"min", "minimum", "from", "above", "over", "threshold", "floor", "least", "lowest"}
_UPPER_WORDS = {"max", "maximum", "to", "below", "under", "ceiling", "most", "highest"}
_START_WORDS = {"start", "from", "since", "begin", "after", "earliest", "first"}
_END_WORDS = {"end", "to", "until", "till", "before", "latest", "last"}
_LIMIT_DESC = re.compile(r"maximum number of|number of (?:rows|results)|how many\b.*\bto (?:list|show|return|rank)\b")
_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")
_COUNT_DESC = re.compile(r"^\s*(?:the\s+)?(?:number|count|how many|size)\b")


def numeric_choices(spec: ParameterSpec) -> bool:
    """Allowed values that are all numbers (1..10 or "1".."10"): the number reader fills it, with its cues,
    so 'for five people' gives 5 and a stray '7' of '7 pm' gives nothing."""
    values = spec.allowed_values
    return bool(values) and all(
        (isinstance(v, int | float) and not isinstance(v, bool)) or (isinstance(v, str) and _NUMERIC.fullmatch(v))
        for v in values or []
    )


def counted_nouns(spec: ParameterSpec) -> frozenset[str]:
    """What a quantity parameter counts: {'seat'} for number_of_seats, {'party'} for party_size; the
    description counts only when it says so ('Number of riders to call a taxi for')."""
    nouns = {stem(t) for t in name_tokens(spec.name)}
    if _COUNT_DESC.match(spec.description.lower()):
        nouns |= {stem(w) for w in re.findall(r"[a-z]+", spec.description.lower())}
    return frozenset(n for n in nouns if n in COUNTED)


def text_count(spec: ParameterSpec) -> bool:
    """A count kept as text: a string parameter without a list or pattern that says it is a number of
    something counted (number_of_days; description 'Number of days ...'), not one merely named after it
    (a 'ticket' code)."""
    said = bool(name_tokens(spec.name) & {"number", "num", "count"}) or _COUNT_DESC.match(spec.description.lower())
    return _plain_text(spec) and bool(said) and bool(counted_nouns(spec))


def _plain_text(spec: ParameterSpec) -> bool:
    """A string parameter without a list or pattern of its own: whatever words it gets are its value."""
    return spec.type is ParameterType.STRING and not spec.allowed_values and not spec.pattern


_AMOUNT_WORDS = frozenset({"amount", "price", "cost", "fee", "payment", "balance", "money", "sum", "budget", "fare"})
_NOT_AN_AMOUNT = frozenset(
    {"method", "center", "centre", "list", "type", "id", "status", "code", "class", "category", "plan", "currency",
     "option", "mode", "name", "kind", "card", "account", "term", "terms", "date", "frequency", "schedule",
     "range", "level", "tier", "band", "bracket", "group", "bucket", "segment", "rating", "format", "source",
     "policy", "rule", "model", "unit", "units"}
)  # fmt: skip


def text_amount(spec: ParameterSpec) -> bool:
    """An amount of money kept as text: a string parameter without a list of its own or a pattern named with an
    amount word (transfer_amount, amount_to_send, price_per_night; not payment_method, cost_center, price_list,
    whose last word says what else it is) or described as one ('The amount of money to transfer')."""
    tokens = name_words(spec.name)
    named = bool(set(tokens) & _AMOUNT_WORDS) and tokens[-1] not in _NOT_AN_AMOUNT
    said = named or re.search(r"\b(?:amount|sum) of money\b", spec.description.lower())
    return _plain_text(spec) and bool(said)


def year_bound(spec: ParameterSpec) -> str | None:
    """'start' for start_year / from_year / min_year, 'end' for end_year / to_year / max_year: the first and
    last year of a range ('the fifties' gives 1950 and 1959); None for a single year."""
    tokens = name_tokens(spec.name)
    if tokens & (_START_WORDS | {"min", "minimum"}):
        return "start"
    if tokens & (_END_WORDS | {"max", "maximum"}):
        return "end"
    return None


def role_of(spec: ParameterSpec) -> Role:
    name = spec.name.lower()
    tokens = name_tokens(name)
    desc = spec.description.lower()
    kind = spec.item_type if spec.type is ParameterType.ARRAY and spec.item_type else spec.type
    if kind in (ParameterType.INTEGER, ParameterType.NUMBER) or numeric_choices(spec):
        return _number_role(spec, name, tokens, desc)
    if kind in (ParameterType.DATE, ParameterType.DATETIME, ParameterType.TIME):
        if tokens & _START_WORDS:
            return Role.START
        if tokens & _END_WORDS:
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


def _number_role(spec: ParameterSpec, name: str, tokens: set[str], desc: str) -> Role:
    if "year" in tokens or name.endswith("year"):
        return Role.YEAR
    if name in _LIMIT_NAMES or _LIMIT_DESC.match(desc):
        return Role.LIMIT
    if not tokens & (_LOWER_WORDS | _UPPER_WORDS) and counted_nouns(spec):
        return Role.QUANTITY  # before 'how many' and 'number': 'How many travelers', number_of_rooms
    if desc.startswith("how many"):
        return Role.LIMIT
    if tokens & {"id", "no", "number", "nr"} or "number" in desc.split()[:2]:
        return Role.IDENTIFIER
    if tokens & _LOWER_WORDS or re.search(r"\b(threshold|lowest|at least|minimum)\b", desc):
        return Role.LOWER
    if tokens & _UPPER_WORDS or re.search(r"\b(highest|at most|maximum|ceiling)\b", desc):
        return Role.UPPER
    return Role.GENERIC
