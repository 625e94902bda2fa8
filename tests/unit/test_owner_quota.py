"""The rule that shares session room between API keys (owner_quota.py), as conversations in memory and MCP
sessions (the ledger) apply it, and the `mcp:` settings that choose the transport and the caps."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from server.conversations.memory_store import MemorySessionStore
from server.conversations.settings import SessionSettings
from server.conversations.state import SessionState
from server.mcp.sessions import Admission, Refusal, SessionLedger
from server.mcp_settings import MCPSettings
from server.owner_quota import Eviction, Quota, evictions
from server.runtime.restart import restart_required
from server.runtime.settings import AppSettings


def test_a_key_at_its_own_cap_loses_its_own():
    assert evictions({"a": 4, "b": 1}, "a", Quota(per_owner=3, total=100)) == [Eviction("a", "owner_cap")]
    assert evictions({"a": 3, "b": 1}, "a", Quota(per_owner=3, total=100)) == []


def test_at_the_total_cap_the_key_holding_the_most_loses_one():
    quota = Quota(per_owner=100, total=5)
    assert evictions({"a": 4, "b": 2}, "b", quota) == [Eviction("a", "total_cap")]  # b's new one costs a
    assert evictions({"a": 3, "b": 3}, "b", quota) == [Eviction("b", "total_cap")]  # a tie: the newcomer's own
    assert evictions({"a": 1, "b": 1, "c": 1}, "c", Quota(per_owner=9, total=2)) == [Eviction("c", "total_cap")]
    # caps lowered by a reload: as many as it takes, the newcomer's own cap first
    assert evictions({"a": 5, "b": 4}, "a", Quota(per_owner=3, total=6)) == [
        Eviction("a", "owner_cap"),
        Eviction("a", "owner_cap"),
        Eviction("b", "total_cap"),
    ]


def _state(owner: str, i: int) -> SessionState:
    return SessionState(id=f"{owner}{i}", owner=owner, adapter="x", turn=1)


async def test_memory_store_keeps_each_keys_sessions_from_another_keys_flood():
    store = MemorySessionStore(SessionSettings(max_sessions=10, max_sessions_per_owner=6))
    await store.save(_state("chat", 0))
    for i in range(50):
        await store.save(_state("flood", i))
    assert store.held() == {"chat": 1, "flood": 6}
    assert await store.load(_state("chat", 0).key) is not None
    assert await store.load(_state("flood", 43).key) is None and await store.load(_state("flood", 44).key) is not None
    for i in range(5):  # a third key fills the rest; beyond it the largest (flood) gives way, then itself
        await store.save(_state("other", i))
    assert store.held() == {"chat": 1, "flood": 5, "other": 4}
    assert await store.load(_state("chat", 0).key) is not None


def test_mcp_settings_choose_the_transport_and_refuse_keys_nothing_reads():
    settings = MCPSettings()
    assert (settings.max_sessions, settings.max_sessions_per_key, settings.idle_timeout_seconds) == (2000, 200, 600)
    assert settings.stateless(cluster_enabled=True) and not settings.stateless(cluster_enabled=False)
    assert settings.stateless(cluster_enabled=False, several_workers=True)
    assert not MCPSettings(transport="stateful").stateless(cluster_enabled=True)  # an LB with session affinity
    assert MCPSettings(transport="stateless").stateless(cluster_enabled=False)
    assert MCPSettings(transport="stateful").stateless(cluster_enabled=False, several_workers=True)
    with pytest.raises(ValidationError, match="only read by the stateful transport"):
        MCPSettings(transport="stateless", max_sessions=10)
    with pytest.raises(ValidationError):
        MCPSettings.model_validate({"max_session": 10})  # unknown key
    cluster = {"enabled": True, "redis_url": "redis://127.0.0.1:6379/0"}
    with pytest.raises(ValidationError, match=r"with cluster\.enabled /mcp is stateless"):
        AppSettings.model_validate({"cluster": cluster, "mcp": {"max_sessions_per_key": 5}})
    AppSettings.model_validate({"cluster": cluster, "mcp": {"transport": "stateful", "max_sessions_per_key": 5}})
    # the transport is chosen at start; caps and idle timeout apply after a reload
    started = AppSettings()
    assert restart_required(started, AppSettings.model_validate({"mcp": {"transport": "stateless"}})) == [
        "mcp.transport"
    ]
    assert restart_required(started, AppSettings.model_validate({"mcp": {"max_sessions": 5}})) == []


def test_ledger_closes_idle_sessions_for_room_and_never_one_in_use():
    now = [0.0]
    ledger = SessionLedger(clock=lambda: now[0])
    quota = Quota(per_owner=2, total=3)

    def open_session(owner: str, sid: str) -> None:
        admission = ledger.admit(owner, quota)
        assert isinstance(admission, Admission) and admission.closing == []
        ledger.registered(sid, admission, owner)
        now[0] += 1

    open_session("a", "a1")
    open_session("a", "a2")
    assert ledger.begin("a1", "a") and ledger.begin("a2", "a")  # both in use (an open event stream each)
    assert not ledger.begin("a1", "b")  # another key's session: not counted as in use
    refused = ledger.admit("a", quota)
    assert isinstance(refused, Refusal) and refused.status == 429 and refused.reason == "owner_cap"
    ledger.end("a1")  # a1 idle now: a's next session takes its place
    admitted = ledger.admit("a", quota)
    assert isinstance(admitted, Admission) and admitted.closing == ["a1"]
    ledger.release(admitted)  # the request opened nothing after all
    open_session("b", "b1")
    ledger.begin("b1", "b")
    assert ledger.counts() == {"a": 1, "b": 1}
    open_session("c", "c1")
    ledger.begin("c1", "c")
    refused = ledger.admit("d", quota)  # full, every session in use
    assert isinstance(refused, Refusal) and refused.status == 503 and refused.reason == "total_cap"
    figures = ledger.figures(quota)
    assert figures.saturated and figures.open == 3 and figures.idle == 0
    assert figures.refused == {"owner_cap": 1, "total_cap": 1}
    assert figures.closed_for_room == {"owner_cap": 1, "total_cap": 0}
    ledger.closed("c1")  # the SDK forgot it (DELETE, idle timeout)
    assert not ledger.figures(quota).saturated
