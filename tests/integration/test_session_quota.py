"""Sessions are counted per API key. A flood of new sessions from one key (conversations over `/v1/query`, MCP
sessions over `/mcp`) leaves another key's pending clarification and its MCP access intact, with sessions in
this process and in the real Redis at 127.0.0.1:6379; MCP saturation shows in /health and /metrics.

Before, one least-recently-used list served every key (one key's 600 requests dropped another key's pending
clarification) and the SDK's one global cap of 10,000 MCP sessions could be filled by a single key, after which
every other key's `initialize` got 503 while /health said `mcp: ok`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from prometheus_client.parser import text_string_to_metric_families

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.mcp_wire import ACCEPT, INIT
from server.testing.redis_server import ensure_redis, unique_prefix

KEYS = {"flood": "flood-k", "chat": "chat-k", "third": "third-k"}
AUTH = "auth:\n  client_keys:\n" + "".join(
    f"    - {{name: {name}, key_env: IR_QUOTA_{name.upper()}_KEY}}\n" for name in KEYS
) + "  stats_key_env: IR_QUOTA_STATS_KEY\n"  # fmt: skip
CLARIFY = "Show me the people in a department"


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, key in KEYS.items():
        monkeypatch.setenv(f"IR_QUOTA_{name.upper()}_KEY", key)
    monkeypatch.setenv("IR_QUOTA_STATS_KEY", "stats-k")


def _key(name: str) -> dict[str, str]:
    return {"X-API-Key": KEYS[name]}


async def _open_raw_session(client, name: str) -> str:
    """`initialize` without the SDK, never ended: the session stays open (idle) until closed for room."""
    resp = await client.post("/mcp", json=INIT, headers={**ACCEPT, **_key(name)})
    assert resp.status == 200, await resp.text()
    await resp.read()
    return resp.headers["mcp-session-id"]


def _on_session(session_id: str, name: str) -> dict[str, str]:
    return {**ACCEPT, **_key(name), "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}


@asynccontextmanager
async def sdk_session(url: str, name: str) -> AsyncIterator[ClientSession]:
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=_key(name)))
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _assert_mcp_works(session: ClientSession) -> None:
    assert {t.name for t in (await session.list_tools()).tools} == {"ask", "explain_routing", "list_templates"}
    result = await session.call_tool("ask", {"question": "headcount per department"})
    assert not result.is_error, result.content
    assert result.structured_content["metadata"]["status"] == "executed"


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_flood_from_one_key_leaves_another_keys_conversation_and_mcp_access(tmp_path: Path, keys, backend):
    prefix = unique_prefix()
    where = f"backend: redis, url: '{ensure_redis()}', key_prefix: '{prefix}', " if backend == "redis" else ""
    config = (
        BASE_CONFIG
        + AUTH
        + f"sessions: {{{where}max_sessions: 40, max_sessions_per_owner: 25}}\n"
        + "mcp: {max_sessions: 8, max_sessions_per_key: 5, idle_timeout_seconds: 600}\n"
    )
    async with running_app(people_tree(tmp_path, config)) as (client, holder):
        # the chat key: a clarification waiting for its answer, and an MCP session (SDK client) in use
        resp = await client.post("/v1/query", json={"query": CLARIFY}, headers=_key("chat"))
        pending = await resp.json()
        assert pending["metadata"]["status"] == "needs_clarification", pending["metadata"]
        url = str(client.make_url("/mcp"))
        async with sdk_session(url, "chat") as chat_mcp:
            await _assert_mcp_works(chat_mcp)

            # the flood: 60 new conversations (more than every key may hold together) and 30 MCP sessions
            started = time.monotonic()
            for _ in range(60):
                resp = await client.post("/v1/query", json={"query": "headcount per department"}, headers=_key("flood"))
                assert resp.status == 200
            flooded = [await _open_raw_session(client, "flood") for _ in range(30)]
            assert time.monotonic() - started < 120

            # the flood key holds at most its own caps; its oldest MCP sessions were closed to make room
            sessions = holder.current.sessions
            if backend == "memory":
                # the chat key's own: its pending clarification and the conversation of its MCP `ask`
                assert sessions.held() == {"chat": 2, "flood": 25}  # type: ignore[attr-defined]
            else:
                redis = sessions.link.client  # type: ignore[attr-defined]
                assert await redis.zcard(f"{prefix}~index:flood") == 25
                assert await redis.zcard(f"{prefix}~index:chat") == 2
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            oldest = await client.post("/mcp", json=listing, headers=_on_session(flooded[0], "flood"))
            assert oldest.status == 404
            newest = await client.post("/mcp", json=listing, headers=_on_session(flooded[-1], "flood"))
            assert newest.status == 200

            # the chat key's MCP session still works, and so does a new one
            await _assert_mcp_works(chat_mcp)
            async with sdk_session(url, "chat") as second:
                await _assert_mcp_works(second)

        # ... and its conversation goes on where it was
        answer = {"query": "Engineering", "session_id": pending["session_id"]}
        resp = await client.post("/v1/query", json=answer, headers=_key("chat"))
        done = await resp.json()
        assert done["metadata"]["status"] == "executed", done["metadata"]
        assert done["metadata"]["reason"] == "clarification_answered"
        assert sorted(r["name"] for r in done["rows"]) == ["Ada", "Grace"]

        health = await (await client.get("/health", headers={"X-API-Key": "stats-k"})).json()
        figures = health["mcp"]["sessions"]
        assert health["mcp"]["status"] == "ok" and health["mcp"]["transport"] == "stateful"
        assert figures["closed_for_room"] == {"owner_cap": 25, "total_cap": 0}
        assert figures["refused"] == {"owner_cap": 0, "total_cap": 0}
        if backend == "redis":
            await redis.delete(*await redis.keys(prefix + "*"))


async def _event_stream(http: aiohttp.ClientSession, base: str, session_id: str, name: str) -> aiohttp.ClientResponse:
    """Open the session's GET event stream (as the SDK client does) and leave it open: the session is in use."""
    headers = {**_on_session(session_id, name), "Accept": "text/event-stream"}
    resp = await http.get(base + "/mcp", headers=headers)
    assert resp.status == 200, await resp.text()
    return resp


async def _mcp_health(client) -> dict:
    return (await (await client.get("/health", headers={"X-API-Key": "stats-k"})).json())["mcp"]


async def _metrics(client) -> dict[tuple[str, tuple], float]:
    text = await (await client.get("/metrics", headers={"X-API-Key": "stats-k"})).text()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("intent_router_mcp")
    }


async def _until(check, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_mcp_saturation_shows_in_health_and_metrics(tmp_path: Path, keys):
    config = BASE_CONFIG + AUTH + "mcp: {max_sessions: 3, max_sessions_per_key: 2}\n"
    async with running_app(people_tree(tmp_path, config)) as (client, _), aiohttp.ClientSession() as http:
        base = str(client.make_url(""))
        flood = [await _open_raw_session(client, "flood") for _ in range(2)]
        chat = await _open_raw_session(client, "chat")
        streams = [await _event_stream(http, base, sid, "flood") for sid in flood]
        streams.append(await _event_stream(http, base, chat, "chat"))
        try:
            # every session in use: the third key is refused (503), the flood key too (429, its own cap)
            resp = await client.post("/mcp", json=INIT, headers={**ACCEPT, **_key("third")})
            assert resp.status == 503 and "mcp.max_sessions" in (await resp.json())["error"]["message"]
            resp = await client.post("/mcp", json=INIT, headers={**ACCEPT, **_key("flood")})
            assert resp.status == 429 and "mcp.max_sessions_per_key" in (await resp.json())["error"]["message"]
            # a request without a session that is not `initialize` opens nothing, so it neither needs nor makes room
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            resp = await client.post("/mcp", json=listing, headers={**ACCEPT, **_key("third")})
            assert resp.status >= 400

            mcp = await _mcp_health(client)
            assert mcp["status"] == "saturated" and "3 of 3 MCP sessions open" in mcp["reason"]
            assert mcp["sessions"] == {
                "open": 3,
                "idle": 0,
                "max_sessions": 3,
                "max_sessions_per_key": 2,
                "keys_at_cap": 1,
                "opened": 3,
                "refused": {"owner_cap": 1, "total_cap": 1},
                "closed_for_room": {"owner_cap": 0, "total_cap": 0},
            }
            health = await (await client.get("/health", headers={"X-API-Key": "stats-k"})).json()
            assert health["status"] == "degraded"
            assert (await (await client.get("/health")).json()) == {"status": "degraded"}  # a probe without a key

            metrics = await _metrics(client)
            assert metrics[("intent_router_mcp_sessions_open", (("key", "flood"),))] == 2
            assert metrics[("intent_router_mcp_sessions_open", (("key", "chat"),))] == 1
            assert metrics[("intent_router_mcp_sessions_max", ())] == 3
            assert metrics[("intent_router_mcp_sessions_max_per_key", ())] == 2
            assert metrics[("intent_router_mcp_sessions_saturated", ())] == 1
            assert metrics[("intent_router_mcp_keys_at_session_cap", ())] == 1
            assert metrics[("intent_router_mcp_sessions_refused_total", (("reason", "total_cap"),))] == 1
            assert metrics[("intent_router_mcp_sessions_refused_total", (("reason", "owner_cap"),))] == 1
            assert metrics[("intent_router_mcp_stateless", ())] == 0

            # one of the flood key's streams ends: that session is idle, and the third key's new one takes its place
            streams.pop(0).close()

            async def one_idle() -> bool:
                return (await _mcp_health(client))["sessions"]["idle"] == 1

            await _until(one_idle)
            third = await _open_raw_session(client, "third")
            resp = await client.post("/mcp", json=listing, headers=_on_session(flood[0], "flood"))
            assert resp.status == 404  # closed for room
            for sid, name in ((flood[1], "flood"), (chat, "chat"), (third, "third")):
                resp = await client.post("/mcp", json=listing, headers=_on_session(sid, name))
                assert resp.status == 200, name
            mcp = await _mcp_health(client)
            assert mcp["status"] == "saturated"
            assert mcp["sessions"]["closed_for_room"] == {"owner_cap": 0, "total_cap": 1}
            metrics = await _metrics(client)
            assert metrics[("intent_router_mcp_sessions_closed_for_room_total", (("reason", "total_cap"),))] == 1
            assert metrics[("intent_router_mcp_sessions_open", (("key", "third"),))] == 1

            # a session ended by its client (DELETE) frees its place: no longer saturated
            resp = await client.delete("/mcp", headers=_on_session(third, "third"))
            assert resp.status == 200

            async def below_cap() -> bool:
                return (await _mcp_health(client))["status"] == "ok"

            await _until(below_cap)
            assert (await _metrics(client))[("intent_router_mcp_sessions_saturated", ())] == 0
        finally:
            for stream in streams:
                stream.close()


async def test_an_idle_mcp_session_is_closed_after_the_idle_timeout_and_its_place_freed(tmp_path: Path, keys):
    config = BASE_CONFIG + AUTH + "mcp: {max_sessions_per_key: 1, idle_timeout_seconds: 0.5}\n"
    async with running_app(people_tree(tmp_path, config)) as (client, _):
        sid = await _open_raw_session(client, "chat")

        async def forgotten() -> bool:
            return (await _mcp_health(client))["sessions"]["open"] == 0

        await _until(forgotten, 10)
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        resp = await client.post("/mcp", json=listing, headers=_on_session(sid, "chat"))
        assert resp.status == 404
        await _open_raw_session(client, "chat")  # its place is free again: nothing had to be closed for room
        assert (await _mcp_health(client))["sessions"]["closed_for_room"] == {"owner_cap": 0, "total_cap": 0}
