"""A message that points back at the person the last answer was about: 'show his reviews', 'who reports to
her?' after 'who is Marcus Webb?'. The pronoun is no name of its own; it stands for the one person's name the
last answer was given, and the template the message routes to takes that name for its own person.

Only the pronouns of one person count: 'they', 'them', 'their' also say "the rows you just showed" ('how many
of them', 'list them'), which the count and more-rows follow-ups read, and 'it' is any thing at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..params.roles import Role, role_of
from ..params.text import words, wordset
from ..templates import ParameterSpec, ParameterType

PERSON_PRONOUNS = wordset("he him his himself she her hers herself")


def refers_to_a_person(message: str) -> bool:
    """The message says he, him, his, she, her or hers."""
    return any(w.lower in PERSON_PRONOUNS for w in words(message))


def is_a_name(spec: ParameterSpec) -> bool:
    """The parameter holds one name as free text (a person's, a customer's, ...), the thing a pronoun stands for;
    not one of a fixed list ('Department name' over Engineering, Sales, ...: nobody is 'him')."""
    return spec.type is ParameterType.STRING and role_of(spec) is Role.NAME and not spec.allowed_values


def referred_to(
    said: Mapping[str, Any], said_specs: Mapping[str, ParameterSpec], missing: list[ParameterSpec]
) -> dict[str, Any]:
    """Which of the message's missing parameters the pronoun fills, and with which name said before: the one
    of the same name, else the only name said for the only name missing ('who reports to him?': manager_name
    is the name the lookup was given); nothing when it is not clear which."""
    names = {n: v for n, v in said.items() if n in said_specs and is_a_name(said_specs[n]) and isinstance(v, str)}
    wanted = [spec for spec in missing if is_a_name(spec)]
    same = {spec.name: names[spec.name] for spec in wanted if spec.name in names}
    if same:
        return same
    if len(names) == 1 and len(wanted) == 1:
        return {wanted[0].name: next(iter(names.values()))}
    return {}
