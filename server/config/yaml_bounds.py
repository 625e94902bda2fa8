"""Bounds checked on YAML's event stream before a document is composed or expanded.

A few hundred bytes of nested aliases ("billion laughs") expand to millions of values, and a deeply
nested flow collection crashes libyaml's recursive composer. Both are caught here from the event
stream, which libyaml produces incrementally and without expanding aliases: nesting depth is counted
as it grows (the scan stops at the first level too deep), and the size every alias would expand to is
computed as a number per anchor (never by expanding), so an alias bomb is rejected in milliseconds.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import yaml

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 100
# Values reached through aliases may at most double a document (plus this floor for small files).
ALIAS_EXPANSION_FLOOR = 10_000

# libyaml's safe loader where PyYAML was built with it (10x faster than the pure-Python one)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class BoundsProblem:
    line: int
    message: str


def check_bounds(text: str) -> BoundsProblem | None:
    """The first bound the document breaks (with its line), or None; YAML syntax errors are left to compose."""
    stack: list[list] = []  # [anchor, expanded size] per open collection
    sizes: dict[str, int] = {}
    distinct = 0
    through_aliases = 0
    crossings: list[tuple[int, int]] = []  # (cumulative alias expansion, line) once past the floor
    try:
        for event in yaml.parse(text, Loader=SAFE_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                distinct += 1
                stack.append([event.anchor, 1])
                if len(stack) > MAX_DEPTH:
                    return BoundsProblem(
                        event.start_mark.line + 1, f"nesting deeper than {MAX_DEPTH} levels is not accepted"
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, size = stack.pop()
                if anchor is not None:
                    sizes[anchor] = size
                if stack:
                    stack[-1][1] += size
            elif isinstance(event, yaml.ScalarEvent):
                distinct += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
                if stack:
                    stack[-1][1] += 1
            elif isinstance(event, yaml.AliasEvent):
                size = sizes.get(event.anchor, 1)  # an undefined anchor is a syntax error compose reports
                through_aliases += size
                if stack:
                    stack[-1][1] += size
                if through_aliases > ALIAS_EXPANSION_FLOOR:
                    crossings.append((through_aliases, event.start_mark.line + 1))
    except yaml.YAMLError:
        return None
    limit = max(ALIAS_EXPANSION_FLOOR, distinct)
    if through_aliases > limit:
        line = crossings[bisect.bisect_right(crossings, (limit, 1 << 62))][1]
        return BoundsProblem(
            line,
            f"aliases expand to {_count(through_aliases)} values for {distinct:,} written "
            f"(at most {limit:,} are accepted): an alias bomb or a runaway anchor",
        )
    return None


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**12 else "more than 10^12"
