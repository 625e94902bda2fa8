"""The session store `sessions.backend` names, built apart from the interface so the stores can import it."""

from __future__ import annotations

from .settings import SessionSettings
from .store import SessionStore


def build_session_store(settings: SessionSettings) -> SessionStore:
    if settings.backend == "redis":
        from .redis_store import RedisSessionStore  # redis is only imported when configured

        return RedisSessionStore(settings)
    from .memory_store import MemorySessionStore

    return MemorySessionStore(settings)
