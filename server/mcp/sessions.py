"""Who holds which MCP session of this process, which of them are idle, and what was refused or closed to make room.

The SDK's session manager keeps one global cap (10,000 by default, about 42 KB each): one API key could open
them all in under two minutes, after which every other key's `initialize` got 503 for up to the 30-minute idle
timeout. This ledger applies the rule of owner_quota.py to MCP sessions before the SDK opens one: a key at
`max_sessions_per_key`, or the key holding the most when the process is at `max_sessions`, gives up its least
recently used *idle* session (no request in flight, no open event stream); when that key has none idle, the new
session is refused (429 at the key's own cap, 503 at the process's). A session in use is never closed for room.

The ledger mirrors the SDK's own bookkeeping: the SDK tells it when it registers a session and when it forgets
one (http_sdk.py), and the endpoint around each request (in flight, last used). It imports nothing of the SDK.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from ..owner_quota import REASONS, Quota, Reason, evictions


@dataclass
class _Held:
    owner: str
    last_used: float
    in_flight: int = 0


@dataclass
class Admission:
    """Room made for one new session of `owner`: it counts as held from now until the SDK registers the
    session, or the request that would have opened it ends."""

    owner: str
    closing: list[str] = field(default_factory=list)  # idle sessions closed to make room (the caller closes them)
    settled: bool = False


@dataclass(frozen=True)
class Refusal:
    reason: Reason
    status: int
    message: str


# the admission of the request being served, for the SDK's hook that registers the session it opens
# (the request runs in a task of its own, which copies this context)
ADMISSION: ContextVar[Admission | None] = ContextVar("intent_router_mcp_admission", default=None)


@dataclass(frozen=True)
class Figures:
    """For /health and /metrics."""

    open_by_key: dict[str, int]
    idle: int
    quota: Quota
    opened: int
    refused: dict[str, int]
    closed_for_room: dict[str, int]

    @property
    def open(self) -> int:
        return sum(self.open_by_key.values())

    @property
    def saturated(self) -> bool:
        return self.open >= self.quota.total

    @property
    def keys_at_cap(self) -> int:
        return sum(1 for n in self.open_by_key.values() if n >= self.quota.per_owner)


class SessionLedger:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, dict[str, _Held]] = {}  # owner -> session id -> its use
        self._owner_of: dict[str, str] = {}
        self._opening: Counter[str] = Counter()
        self.opened = 0
        self.refused: Counter[Reason] = Counter()
        self.closed_for_room: Counter[Reason] = Counter()

    def counts(self) -> dict[str, int]:
        """Sessions per key, the ones being opened included."""
        counts = Counter({owner: len(sessions) for owner, sessions in self._held.items()})
        counts.update(self._opening)
        return {owner: n for owner, n in counts.items() if n > 0}

    def admit(self, owner: str, quota: Quota) -> Admission | Refusal:
        """Room for one more session of `owner`: the idle sessions to close for it, or why there is none."""
        held = self.counts()
        held[owner] = held.get(owner, 0) + 1
        closing: list[tuple[str, Reason]] = []
        for eviction in evictions(held, owner, quota):
            victim = self._idlest(eviction.owner, {sid for sid, _ in closing})
            if victim is None:
                self.refused[eviction.reason] += 1
                return _refusal(eviction.reason, quota)
            closing.append((victim, eviction.reason))
        for sid, reason in closing:
            self.closed(sid)
            self.closed_for_room[reason] += 1
        self._opening[owner] += 1
        return Admission(owner, [sid for sid, _ in closing])

    def registered(self, session_id: str, admission: Admission | None, owner: str) -> None:
        """The SDK registered a session: for the admitted `initialize`, or (no admission) for another request
        without a session id, which the SDK refuses and forgets again at once."""
        if admission is not None:
            owner = admission.owner
            self.release(admission)
            self.opened += 1
        self._held.setdefault(owner, {})[session_id] = _Held(owner, self._clock())
        self._owner_of[session_id] = owner

    def release(self, admission: Admission) -> None:
        """The admitted request is over (or registered its session): it no longer holds room of its own."""
        if not admission.settled:
            admission.settled = True
            self._opening[admission.owner] -= 1
            if self._opening[admission.owner] <= 0:
                del self._opening[admission.owner]

    def closed(self, session_id: str) -> None:
        owner = self._owner_of.pop(session_id, None)
        if owner is None:
            return
        sessions = self._held[owner]
        del sessions[session_id]
        if not sessions:
            del self._held[owner]

    def begin(self, session_id: str, owner: str) -> bool:
        """A request for `session_id` by `owner` starts (False: not a session of that key; the SDK answers 404)."""
        held = self._held.get(owner, {}).get(session_id)
        if held is None:
            return False
        held.in_flight += 1
        return True

    def end(self, session_id: str) -> None:
        owner = self._owner_of.get(session_id)
        held = self._held[owner].get(session_id) if owner is not None else None
        if held is not None:
            held.in_flight = max(0, held.in_flight - 1)
            held.last_used = self._clock()

    def figures(self, quota: Quota) -> Figures:
        idle = sum(1 for sessions in self._held.values() for h in sessions.values() if not h.in_flight)
        return Figures(
            open_by_key={owner: len(sessions) for owner, sessions in self._held.items()},
            idle=idle,
            quota=quota,
            opened=self.opened,
            refused={reason: self.refused[reason] for reason in REASONS},
            closed_for_room={reason: self.closed_for_room[reason] for reason in REASONS},
        )

    def _idlest(self, owner: str, taken: set[str]) -> str | None:
        """The least recently used idle session of `owner` not already chosen."""
        idle = [(h.last_used, sid) for sid, h in self._held.get(owner, {}).items() if not h.in_flight]
        idle = [pair for pair in idle if pair[1] not in taken]
        return min(idle)[1] if idle else None


def _refusal(reason: Reason, quota: Quota) -> Refusal:
    if reason == "owner_cap":
        return Refusal(
            reason,
            429,
            f"this API key has {quota.per_owner} MCP sessions open and none is idle "
            "(mcp.max_sessions_per_key): end one (DELETE /mcp) before opening another",
        )
    return Refusal(
        reason,
        503,
        f"this server has {quota.total} MCP sessions open and none that may be closed is idle (mcp.max_sessions)",
    )
