"""Conversations: a session remembers what its last answer left pending (a clarification or a choice),
so the next message can be just the missing value or the pick, and the last executed answer, so the next
message can change one of its values ("what about Sales?")."""

from .follow_up import FollowUp, interpret
from .session import Conversation, SessionTurn
from .settings import SessionSettings
from .state import LastAnswer, PendingChoice, PendingClarification, SessionState, TemplateRef
from .store import SessionStore
from .store_factory import build_session_store

__all__ = [
    "Conversation",
    "FollowUp",
    "LastAnswer",
    "PendingChoice",
    "PendingClarification",
    "SessionSettings",
    "SessionState",
    "SessionStore",
    "SessionTurn",
    "TemplateRef",
    "build_session_store",
    "interpret",
]
