"""One message's place in its session: open the state, read the message against it, record the answer."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ..params.base import ExtractionSource
from ..routing.policy import RoutingPolicy
from ..routing.router import RoutingOutcome
from .follow_up import FollowUp, Kind, Reroute, interpret
from .state import LastAnswer, PendingChoice, PendingClarification, SessionState, session_key
from .store import SessionStore, new_session_id

Pending = PendingClarification | PendingChoice


@dataclass
class SessionTurn:
    """What the response and the routing log say about this message's place in the session."""

    session_id: str
    turn: int
    follow_up: Kind | None = None
    completes_turn: int | None = None  # the turn whose clarification or choice this message answered
    adapter: str | None = None  # a follow-up: the data adapter and template it completed
    template_id: str | None = None
    digest: str = ""  # what the routing log keeps instead of the id (which would let a reader continue it)


@dataclass
class Conversation:
    store: SessionStore
    state: SessionState  # as loaded (or new); `record` advances it
    resumed: bool  # the session existed (not new, not expired)

    @classmethod
    async def open(cls, store: SessionStore, session_id: str | None, owner: str, adapter: str) -> Conversation:
        """The session named by the client, or a new one (the server issues the id when none is given).
        An unknown or expired id starts a session under that id."""
        sid = session_id or new_session_id()
        state = await store.load(session_key(owner, sid)) if session_id else None
        if state is None:
            return cls(store, SessionState(id=sid, owner=owner, adapter=adapter), resumed=False)
        if state.adapter != adapter:  # what is pending was asked of another adapter
            state = state.model_copy(
                update={"adapter": adapter, "clarification": None, "choice": None, "pending_turn": None}
            )
        return cls(store, state, resumed=True)

    async def interpret(
        self,
        message: str,
        outcome: RoutingOutcome,
        sources: Mapping[str, ExtractionSource],
        policy: RoutingPolicy,
        reroute: Reroute | None = None,
    ) -> FollowUp | None:
        """The follow-up this message is, or None (a new question). `policy.follow_ups` off: only what is
        pending is continued, never the last answer. `reroute`: routes the last question again when a
        follow-up's value belongs to a template next to the last one."""
        state = self.state if policy.follow_ups else self.state.model_copy(update={"last": None})
        if not state.pending and state.last is None:
            return None
        margin = self.store.settings.new_question_margin
        return await interpret(state, message, outcome, sources, policy.confidence_threshold, margin, reroute)

    async def record(
        self,
        pending: Pending | None,
        follow_up: FollowUp | None,
        executed: LastAnswer | None = None,
        fanned_out: bool = False,
    ) -> SessionTurn:
        """Store this turn (what its answer leaves pending, the template and values it ran) and say where it
        stands. A turn that ran nothing keeps the last executed answer for the next follow-up; a fan-out
        answer (several sources' templates, none of them the answer) leaves none."""
        turn = self.state.turn + 1
        self.state = self.state.model_copy(
            update={
                "turn": turn,
                "clarification": pending if isinstance(pending, PendingClarification) else None,
                "choice": pending if isinstance(pending, PendingChoice) else None,
                "pending_turn": turn if pending is not None else None,
                "last": executed if executed is not None else None if fanned_out else self.state.last,
                "updated_at": time.time(),
            }
        )
        await self.store.save(self.state)
        digest = hashlib.sha256(self.state.key.encode("utf-8")).hexdigest()[:32]
        if follow_up is None:
            return SessionTurn(self.state.id, turn, digest=digest)
        return SessionTurn(
            self.state.id,
            turn,
            follow_up.kind,
            follow_up.completes_turn,
            follow_up.source.name,
            follow_up.template.id,
            digest,
        )
