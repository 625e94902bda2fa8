"""One MCP session of the official SDK client through a round-robin proxy over two replicas (each its own app,
runtime holder and copy of the config dir, with `cluster.enabled` and sessions on the real Redis at
127.0.0.1:6379 under a key prefix of the test's own): initialize, list_tools and `ask` (a clarification asked
on one replica and answered on the other) all succeed whichever replica answers. The stateful transport gave
404 "Session not found" as soon as a request of the session reached the other replica. Stateless, `/mcp`
answers GET (the event stream for server-initiated messages) with 405: nothing is sent outside a request."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import aiohttp
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from server.runtime.holder import RuntimeHolder
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.loopback import serving
from server.testing.redis_server import ensure_redis, unique_prefix
from server.testing.round_robin import round_robin
from server.web.app import create_app

KEYS = "auth:\n  client_keys:\n    - {name: assistant, key_env: IR_REPLICAS_MCP_KEY}\n"


def cluster_config(redis_url: str, prefix: str) -> str:
    return (
        BASE_CONFIG
        + KEYS
        + f"sessions: {{backend: redis, url: '{redis_url}', key_prefix: '{prefix}session:'}}\n"
        + f"cluster: {{enabled: true, redis_url: '{redis_url}', key_prefix: '{prefix}cluster:'}}\n"
    )


@asynccontextmanager
async def replicas(roots: list[Path]) -> AsyncIterator[list[str]]:
    """Each root served by an app of its own on a loopback port; yields their base URLs."""
    async with AsyncExitStack() as stack:
        urls = []
        for root in roots:
            holder = RuntimeHolder(root / "config", close_grace=0.1)
            await holder.start()
            stack.push_async_callback(holder.close)
            urls.append(await stack.enter_async_context(serving(create_app(holder))))
        yield urls


async def test_one_mcp_session_served_by_two_replicas_behind_round_robin(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_REPLICAS_MCP_KEY", "assistant-k")
    redis_url, prefix = ensure_redis(), unique_prefix()
    first = tmp_path / "a"
    people_tree(first, cluster_config(redis_url, prefix))
    shutil.copytree(first, tmp_path / "b")
    try:
        async with replicas([first, tmp_path / "b"]) as urls, round_robin(urls) as (proxy_url, proxy):
            async with aiohttp.ClientSession() as http:
                for url in urls:  # both replicas say how /mcp runs, and that it is not saturated
                    async with http.get(url + "/health", headers={"X-API-Key": "assistant-k"}) as resp:
                        body = await resp.json()
                    assert body["status"] == "ok", body
            headers = {"X-API-Key": "assistant-k"}
            transport = streamable_http_client(proxy_url + "/mcp", http_client=create_mcp_http_client(headers=headers))
            async with transport as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.server_info.name == "intent-router"
                tools = {t.name for t in (await session.list_tools()).tools}
                assert tools == {"ask", "explain_routing", "list_templates"}
                asked = await session.call_tool("ask", {"question": "Show me the people in a department"})
                assert not asked.is_error, asked.content
                body = asked.structured_content
                assert body["metadata"]["status"] == "needs_clarification", body["metadata"]
                done = await session.call_tool("ask", {"question": "Engineering", "session_id": body["session_id"]})
                assert not done.is_error, done.content
                meta = done.structured_content["metadata"]
                assert meta["status"] == "executed" and meta["reason"] == "clarification_answered", meta
                assert sorted(r["name"] for r in done.structured_content["rows"]) == ["Ada", "Grace"]
                listed = await session.call_tool("list_templates", {})
                assert not listed.is_error and listed.structured_content["template_count"] == 3

            # every request went through the proxy, alternately: each replica answered part of the one session
            posts = proxy.upstreams_of("POST", "/mcp")
            assert len(posts) >= 5 and set(posts) == set(urls)
            async with (
                aiohttp.ClientSession() as http,
                http.get(urls[0] + "/health", headers={"X-API-Key": "assistant-k"}) as resp,
            ):
                mcp = (await resp.json())["mcp"]
            assert mcp == {"status": "ok", "transport": "stateless"}
            # no event stream outside a request (nothing would ever be sent on it): GET says so at once
            headers = {"X-API-Key": "assistant-k", "Accept": "text/event-stream"}
            async with aiohttp.ClientSession() as http, http.get(proxy_url + "/mcp", headers=headers) as resp:
                assert resp.status == 405 and resp.headers["Allow"] == "POST"
    finally:
        import redis

        client = redis.Redis.from_url(redis_url)
        stale = list(client.scan_iter(prefix + "*"))
        if stale:
            client.delete(*stale)
        client.close()
