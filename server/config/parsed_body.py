"""An adapter's parsed query body: what the template loader checks each body into and the parse cache keeps.

It sits in config/ because the parse cache (config/parse_cache.py) stores it and the template loader
(templates/library.py) builds on config/, not the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParsedBody:
    """An adapter's parsed query body and the parameter names it uses."""

    value: Any
    placeholders: frozenset[str]


BodyParser = Callable[[Any], ParsedBody]
