"""How a request's first invalid field is named in a 400 (JSON bodies, query strings, MCP tool arguments):
`field: what is wrong`. A field the model does not know is the client's own text, so it is shown only as
far as SHOWN_CHARS and printable: an error never sends a long or hostile input back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

SHOWN_CHARS = 64


def shown(text: str) -> str:
    """A client's name as an error may repeat it: control and format characters as '?', cut short."""
    safe = "".join(c if c.isprintable() else "?" for c in text)
    return safe if len(safe) <= SHOWN_CHARS else safe[:SHOWN_CHARS] + "..."


def first_problem(
    exc: ValidationError, whole: str, unknown: str, message: Callable[[str, Any], str] | None = None
) -> str:
    """`field: problem` for the first error: `unknown` for a field the model does not take, else `message`'s
    wording (pydantic's by default); `whole` names the input when the error is about all of it."""
    first = exc.errors(include_url=False)[0]
    name = ".".join(shown(str(part)) for part in first["loc"]) or whole
    if first["type"] == "extra_forbidden":
        return f"{name}: {unknown}"
    return f"{name}: {message(name, first) if message is not None else first['msg']}"
