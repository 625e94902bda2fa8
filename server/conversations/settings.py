"""The `sessions:` block of config.yaml: where conversation state lives, how long and how much of it."""

from __future__ import annotations

from pydantic import Field

from ..config.backend import BackendChoice
from ..owner_quota import Quota


class SessionSettings(BackendChoice):
    """Conversations: what a clarification or a list of alternatives left pending, and the last answer
    (memory: in this process; redis: shared by every server process)."""

    redis_only = ("url", "key_prefix", "timeout")

    # backend memory: in this process (lost on restart, not shared); redis: shared by every server process
    ttl_seconds: float = Field(
        1800.0, gt=0, description="a session untouched this long is forgotten (Redis: the key's expiry)"
    )
    # all API keys together; beyond it the key holding the most loses its least recently used session
    max_sessions: int = Field(
        10_000,
        ge=1,
        description="sessions of all API keys together; beyond it the key holding the most loses its least recently "
        "used one",
    )
    # one API key; beyond it that key loses its own least recently used session (owner_quota.py: the rule)
    max_sessions_per_owner: int = Field(
        10_000, ge=1, description="sessions of one API key; beyond it that key loses its own least recently used one"
    )
    max_state_bytes: int = Field(
        16_384, ge=256, description="a session state larger than this keeps no pending question"
    )
    key_prefix: str = Field(
        "intent-router:session:",
        min_length=1,
        max_length=200,
        description="redis only: prefix of the Redis keys (one per session, an index per API key)",
    )
    # seconds a Redis round trip (or connecting) may take; slower counts as unreachable: the session
    # goes on in this process, and Redis is rested and retried as for the other shared stores
    timeout: float = Field(
        1.0,
        gt=0,
        le=30,
        description="redis only: seconds a Redis round trip or connect may take; slower counts as unreachable and the"
        " session goes on in this process",
    )
    # a message that would execute on its own with a score this far above the threshold is a new question,
    # unless it is nothing but values or a choice for what is pending
    new_question_margin: float = Field(
        0.25,
        ge=0,
        description="a message that would execute on its own this far above the threshold is a new question, unless "
        "it is nothing but the awaited values or choice",
    )

    @property
    def quota(self) -> Quota:
        return Quota(per_owner=self.max_sessions_per_owner, total=self.max_sessions)
