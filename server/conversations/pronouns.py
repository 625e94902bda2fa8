"""A message that points back at the person the last answer was about: 'show his reviews', 'who reports to
her?', 'when was he hired?' after 'who is Marcus Webb?'. The pronoun is no name of its own; it stands for the
one name the last answer was given, and the message is read as if it said that name ('show Marcus Webb's
reviews'), so that routing and the readers see what the user meant.

Only the pronouns of one person count: 'they', 'them', 'their' also say "the rows you just showed" ('how many
of them', 'list them'), which the count and more-rows follow-ups read, and 'it' is any thing at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..params.roles import Role, role_of
from ..params.text import words, wordset
from ..templates import ParameterSpec, ParameterType

PERSON_PRONOUNS = wordset("he him his himself she her hers herself")
_POSSESSIVE = wordset("his hers")
# what may follow an object 'her' ('report to her', 'her?', 'her in 2024'); before anything else it is 'her
# reviews', a possessive
_AFTER_AN_OBJECT = wordset(
    "in on at for from to by with about since after before during until and or but than as please thanks now "
    "today this that these those the a an is was"
)
_WORD = re.compile(r"[A-Za-z]+")


def refers_to_a_person(message: str) -> bool:
    """The message says he, him, his, she, her or hers."""
    return any(w.lower in PERSON_PRONOUNS for w in words(message))


def is_a_name(spec: ParameterSpec) -> bool:
    """The parameter holds one name as free text (a person's, a customer's, ...), the thing a pronoun stands for;
    not one of a fixed list ('Department name' over Engineering, Sales, ...: nobody is 'him')."""
    return spec.type is ParameterType.STRING and role_of(spec) is Role.NAME and not spec.allowed_values


def the_one_name(said: Mapping[str, Any], specs: Mapping[str, ParameterSpec]) -> str | None:
    """The name the last answer was given, when it was given exactly one (two: which one is 'him'?)."""
    names = {v for n, v in said.items() if n in specs and is_a_name(specs[n]) and isinstance(v, str) and v.strip()}
    return next(iter(names)) if len(names) == 1 else None


def with_name(message: str, name: str) -> str:
    """The message with its pronouns of one person replaced by the name ('show his reviews' -> "show Marcus
    Webb's reviews", 'who reports to her?' -> 'who reports to Marcus Webb?'); a name written all in lower case
    is capitalised, as a name in a question is."""
    shown = name if any(c.isupper() for c in name) else name.title()
    found = list(_WORD.finditer(message))
    out, at = [], 0
    for i, match in enumerate(found):
        word = match.group().casefold()
        if word not in PERSON_PRONOUNS:
            continue
        nxt = found[i + 1] if i + 1 < len(found) else None
        # 'her reviews' is hers; 'her?', 'her, please', 'report to her in 2024' is her
        before_a_noun = (
            nxt is not None
            and not message[match.end() : nxt.start()].strip(" ")
            and nxt.group().casefold() not in _AFTER_AN_OBJECT
        )
        owner = word in _POSSESSIVE or (word == "her" and before_a_noun)
        out += [message[at : match.start()], f"{shown}'s" if owner else shown]
        at = match.end()
    return "".join([*out, message[at:]])
