"""What a session remembers between two messages: the last turn's number and what it left pending.

Small and JSON-serialisable on purpose (the Redis backend stores it as one string): the pending
template by reference (adapter + id, looked up again in the current config), the values already
found (re-validated against the template when used), the alternatives of an ambiguous answer, and the
last executed answer's template and values (what a follow-up changes).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def session_key(owner: str, session_id: str) -> str:
    return f"{owner}:{session_id}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TemplateRef(_Model):
    """A template by reference: the data adapter that owns it and its id."""

    adapter: str
    template_id: str
    description: str = ""
    score: float | None = None  # the routing score it had when it was chosen or listed


class PendingClarification(_Model):
    """A `needs_clarification` answer: the template chosen, the values found, the parameters still wanted."""

    template: TemplateRef
    values: dict[str, Any] = Field(default_factory=dict)
    wanted: list[str]
    question: str


class PendingChoice(_Model):
    """An `ambiguous` answer: the question and the alternatives it listed, in the order shown."""

    question: str
    options: list[TemplateRef]


class LastAnswer(_Model):
    """The answer the session's last executed question got: its template and the values it ran with, so that
    a follow-up ("what about Sales?", "and for 2023?") can run it again with one value changed."""

    template: TemplateRef
    values: dict[str, Any] = Field(default_factory=dict)
    question: str


class SessionState(_Model):
    id: str
    owner: str = ""  # the API key's name: another key's session is not continued
    adapter: str  # the adapter asked; a follow-up must ask the same one
    turn: int = 0  # messages answered in this session so far
    pending_turn: int | None = None  # the turn that left something pending
    clarification: PendingClarification | None = None
    choice: PendingChoice | None = None
    last: LastAnswer | None = None  # the last executed answer, for follow-ups that change its values
    updated_at: float = Field(default_factory=time.time)

    @property
    def key(self) -> str:
        """Where the store keeps it: per API key, so one key can never continue or overwrite another's."""
        return session_key(self.owner, self.id)

    @property
    def pending(self) -> bool:
        return self.clarification is not None or self.choice is not None

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, raw: str | bytes) -> SessionState:
        return cls.model_validate_json(raw)
