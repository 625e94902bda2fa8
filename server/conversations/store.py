"""Where sessions live: the store interface, shared by the in-process and the Redis backends.

Stores hold the state as its JSON text, so both backends take the same serialisation path and a
state that does not parse (written by another version) is simply a fresh start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any

from pydantic import ValidationError

from .settings import SessionSettings
from .state import SessionState, session_key

log = logging.getLogger("intent_router.sessions")


def new_session_id() -> str:
    """An id no client can guess (128 random bits)."""
    return secrets.token_urlsafe(16)


class SessionStore(ABC):
    def __init__(self, settings: SessionSettings) -> None:
        self.settings = settings
        # one lock per session with a message in progress (a lock nobody holds or waits for goes away)
        self._turns: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @contextlib.asynccontextmanager
    async def one_message_at_a_time(self, owner: str, session_id: str | None) -> AsyncIterator[None]:
        """A session's messages are answered one after another in this process: two follow-ups sent at
        once (a client retrying, a double click) would otherwise both complete the same pending turn and
        save over each other. A message without a session id starts a new one and waits for nothing."""
        if session_id is None:
            yield
            return
        key = session_key(owner, session_id)
        lock = self._turns.get(key)
        if lock is None:
            lock = self._turns[key] = asyncio.Lock()
        async with lock:
            yield

    @abstractmethod
    async def _read(self, key: str) -> str | None: ...

    @abstractmethod
    async def _write(self, owner: str, key: str, text: str) -> None:
        """Store `text` under `key` for `owner` (the API key's name), within the owner's and the total caps."""

    async def load(self, key: str) -> SessionState | None:
        """The state stored under `key` (SessionState.key); None when unknown, expired or unreadable."""
        text = await self._read(key)
        if text is None:
            return None
        try:
            return SessionState.from_json(text)
        except ValidationError:
            log.warning("a stored session state does not parse; starting over")
            return None

    async def save(self, state: SessionState) -> None:
        """Store the state (refreshing its expiry); one that outgrows `max_state_bytes` keeps no pending part,
        and then no last answer either if it still does (so a session never holds more than the bound)."""
        text = state.to_json()
        for dropped in ({"clarification": None, "choice": None, "pending_turn": None}, {"last": None}):
            if len(text.encode("utf-8")) <= self.settings.max_state_bytes:
                break
            state = state.model_copy(update=dropped)
            text = state.to_json()
        await self._write(state.owner, state.key, text)

    def health(self) -> dict[str, Any] | None:
        """A shared backend's state for /health (None: in this process, nothing to report)."""
        return None

    async def recheck(self) -> None:  # noqa: B027 - a shared backend asks its engine again
        """Before /health reads `health()`: a shared backend that is down tries its engine once more."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections (Redis)."""
