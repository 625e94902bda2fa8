"""DNS-rebinding protection on a loopback server (web/host_guard.py): a request whose `Host` names another
host (a page whose name re-resolved to 127.0.0.1) is 421, a browser `Origin` of another site 403, on every
route, /mcp included, in the JSON error body; loopback's own names, `server.allowed_hosts` and clients that
send no `Origin` are served. Off loopback nothing is checked (the keys protect the server)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from server.server_settings import ServerSettings, host_name
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree
from server.web.host_guard import origin_host, refusal

QUESTION = {"query": "who works in Engineering?", "adapter": "people"}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def test_requests_for_another_host_or_from_another_site_are_refused_on_every_route(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        port = client.port
        for headers in ({"Host": "evil.example"}, {"Host": f"evil.example:{port}"}, {"Host": "127.0.0.1.evil.example"}):
            resp = await client.post("/v1/query", json=QUESTION, headers=headers)
            assert resp.status == 421, headers
            assert (await resp.json())["error"]["code"] == "misdirected_request"
        for method, path in (("GET", "/v1/templates"), ("POST", "/admin/reload"), ("GET", "/health")):
            resp = await client.request(method, path, headers={"Host": f"evil.example:{port}"})
            assert resp.status == 421, path
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null", "file://"):
            resp = await client.post("/v1/query", json=QUESTION, headers={"Origin": origin})
            assert resp.status == 403, origin
            assert (await resp.json())["error"]["code"] == "forbidden"
        resp = await client.post("/mcp", json=PING, headers={**MCP_HEADERS, "Host": "evil.example"})
        assert resp.status == 421 and resp.content_type == "application/json"  # not the SDK's plain text


async def test_loopback_names_and_clients_without_an_origin_are_served(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        port = client.port
        for headers in (
            {},
            {"Host": f"localhost:{port}"},
            {"Host": f"[::1]:{port}"},
            {"Host": "127.0.0.1"},
            {"Origin": f"http://127.0.0.1:{port}"},
            {"Origin": f"http://localhost:{port}"},
        ):
            resp = await client.post("/v1/query", json=QUESTION, headers=headers)
            assert resp.status == 200, headers
            assert (await resp.json())["status"] == "executed"


async def test_server_allowed_hosts_adds_a_reverse_proxys_name(tmp_path):
    config = BASE_CONFIG + "server: {allowed_hosts: [Router.Example.com:8443]}\n"  # read as the name alone
    async with running_app(people_tree(tmp_path, config)) as (client, _):
        headers = {"Host": "router.example.com", "Origin": "https://router.example.com"}
        resp = await client.post("/v1/query", json=QUESTION, headers=headers)
        assert resp.status == 200
        resp = await client.post("/v1/query", json=QUESTION, headers={"Host": "other.example.com"})
        assert resp.status == 421


def test_the_rule_reads_hosts_and_origins():
    assert host_name("LocalHost:8080") == "localhost" and host_name("[::1]:80") == "::1" and host_name("::1") == "::1"
    assert host_name("127.0.0.1") == "127.0.0.1" and host_name("evil.example:1") == "evil.example"
    assert origin_host("https://Router.Example.com:8443") == "router.example.com"
    assert origin_host("null") is None and origin_host("file://") is None
    assert origin_host("chrome-extension://x") is None
    assert refusal("evil.example", "http://evil.example", "0.0.0.0", []) is None  # off loopback: the keys decide
    assert refusal("evil.example", None, "127.0.0.1", []) is not None
    assert refusal(None, None, "127.0.0.1", []) is None  # an HTTP/1.0 probe without Host: browsers always send it
    assert refusal("router.example.com", "https://router.example.com", "127.0.0.1", ["router.example.com"]) is None
    assert refusal("127.0.0.1:8080", None, "127.0.0.1", []) is None
    # a page's own form with an opaque origin (Chromium, the dashboard's login); a cross-site one is refused
    assert refusal("127.0.0.1:8080", "null", "127.0.0.1", [], "same-origin") is None
    assert refusal("127.0.0.1:8080", "null", "127.0.0.1", [], "cross-site") is not None


def test_allowed_hosts_are_names():
    assert ServerSettings(allowed_hosts=["Router.Example.com:8443", "[fd00::1]"]).allowed_hosts == [
        "router.example.com",
        "fd00::1",
    ]
    for wrong in ("*", "*.example.com", "https://router.example.com/x"):
        with pytest.raises(ValidationError):
            ServerSettings(allowed_hosts=[wrong])
