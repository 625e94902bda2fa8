"""How room for sessions is shared between API keys: the one rule behind conversation sessions (in memory and in
Redis) and MCP sessions.

One least-recently-used list for every key let one key's burst of new sessions push out another key's
conversation (600 requests from one key in 1.9 s dropped another key's pending clarification). So each key
(`owner`, the API key's name) is counted on its own:

- a key that holds more than `per_owner` sessions loses its own least recently used one;
- when all keys together hold more than `total`, the key holding the most loses its least recently used
  one: the newcomer itself when it holds as many as any other key.

So a key's new sessions never push out the sessions of a key holding fewer than it does: a flood from one key
only ever costs that key its own older sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Reason = Literal["owner_cap", "total_cap"]
REASONS: tuple[Reason, ...] = ("owner_cap", "total_cap")


@dataclass(frozen=True)
class Quota:
    per_owner: int  # sessions one API key may hold
    total: int  # sessions every key together may hold


@dataclass(frozen=True)
class Eviction:
    """One session of `owner` (its least recently used) has to go, and why."""

    owner: str
    reason: Reason


def evictions(held: Mapping[str, int], newcomer: str, quota: Quota) -> list[Eviction]:
    """The sessions to drop, one entry each, now that `newcomer` has stored a session: `held` counts every
    owner's sessions including that one."""
    counts = {owner: n for owner, n in held.items() if n > 0}
    counts.setdefault(newcomer, 0)
    out: list[Eviction] = []
    while counts[newcomer] > quota.per_owner:
        out.append(Eviction(newcomer, "owner_cap"))
        counts[newcomer] -= 1
    total = sum(counts.values())
    while total > quota.total:
        largest = max(counts, key=lambda owner: (counts[owner], owner == newcomer))
        out.append(Eviction(largest, "total_cap"))
        counts[largest] -= 1
        total -= 1
    return out
