"""The MCP server driven by the SDK's own client: over stdio (spawning `python run.py mcp` on the demo)
and over streamable HTTP against a live test server (keys and adapter scopes as in the JSON API,
tools/list_changed after a reload)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from prometheus_client.parser import text_string_to_metric_families

from server.testing.app import running_app
from server.testing.configs import write
from server.testing.demo import warm_demo_tree, with_demo_keys
from server.testing.mcp_wire import ACCEPT, INIT

REPO = Path(__file__).resolve().parents[2]
TOOLS = ["ask", "explain_routing", "list_templates"]


def tool_error(result: types.CallToolResult) -> str:
    """A tool error as the MCP specification has it: `isError`, the JSON API's error body as text, and no
    structured content (which would have to match the tool's outputSchema). Returns the error code."""
    assert result.is_error and result.structured_content is None, result
    [block] = result.content
    body = json.loads(block.text)
    assert set(body) == {"error"} and body["error"]["message"]
    return body["error"]["code"]


async def _ask_engineering(session: ClientSession) -> dict:
    result = await session.call_tool("ask", {"question": "how many employees are in Engineering?"})
    assert not result.is_error, result.content
    body = result.structured_content
    assert body["metadata"]["status"] == "executed"
    assert body["metadata"]["composite_routing"]["selected_adapter"] == "hr"
    assert body["rows"] and body["rows"][0]["department"] == "Engineering"
    assert "Engineering" in result.content[0].text
    return body


async def test_stdio_demo(tmp_path):
    config = warm_demo_tree(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=[str(REPO / "run.py"), "mcp", "--no-watch", "--config", str(config)], cwd=REPO
    )
    async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
        init = await asyncio.wait_for(session.initialize(), 120)
        assert init.server_info.name == "intent-router"
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert sorted(tools) == TOOLS
        ask = tools["ask"]
        assert "- hr (" not in ask.description and "- hr: Employees, departments" in ask.description
        assert "routes each question to one of: hr, sales" in ask.description
        assert "Salary summary for one department" in ask.description
        assert ask.input_schema["properties"]["adapter"]["enum"] == ["hr", "sales", "company"]
        assert ask.input_schema["required"] == ["question"]
        assert tools["list_templates"].output_schema["required"] == ["adapters", "template_count"]

        await _ask_engineering(session)
        result = await session.call_tool("ask", {"question": "who earns more than?", "adapter": "hr"})
        assert result.structured_content["metadata"]["status"] == "needs_clarification"
        assert result.structured_content["metadata"]["clarification"][0]["name"] == "min_salary"

        explained = await session.call_tool("explain_routing", {"question": "top 5 customers by revenue"})
        assert explained.structured_content["routing_decision"]["would_route_to"] == "sales"
        listed = await session.call_tool("list_templates", {"adapter": "hr"})
        assert [a["name"] for a in listed.structured_content["adapters"]] == ["hr"]

        bad = await session.call_tool("ask", {"question": "x", "colour": "red"})
        assert tool_error(bad) == "bad_request"
        unknown = await session.call_tool("ask", {"question": "headcount", "adapter": "nope"})
        assert tool_error(unknown) == "not_found"
        # a client's own names come back short and printable (api/validation.py), never whole
        hostile = "\u202e" + "Z" * 5000
        long_arg = await session.call_tool("ask", {"question": "x", hostile: 1})
        assert tool_error(long_arg) == "bad_request"
        assert "Z" * 65 not in long_arg.content[0].text and "\u202e" not in long_arg.content[0].text
        no_tool = await session.call_tool("T" * 5000, {})
        assert tool_error(no_tool) == "not_found" and "T" * 65 not in no_tool.content[0].text


def _client(url: str, key: str | None):
    headers = {"X-API-Key": key} if key else None
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


async def test_http_scopes_and_list_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DEMO_ADMIN_KEY", "admin-k")
    monkeypatch.setenv("IR_DEMO_COMPANY_KEY", "company-k")
    monkeypatch.setenv("IR_DEMO_HR_KEY", "hr-k")
    config = with_demo_keys(warm_demo_tree(tmp_path))
    async with running_app(config) as (client, holder):
        url = str(client.make_url("/mcp"))
        resp = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert resp.status == 401 and (await resp.json())["error"]["code"] == "unauthorized"

        changed = asyncio.Event()

        async def on_message(message) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changed.set()

        async with (
            _client(url, "company-k") as (read, write_stream),
            ClientSession(read, write_stream, message_handler=on_message) as session,
        ):
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert sorted(tools) == TOOLS
            assert tools["ask"].input_schema["properties"]["adapter"]["enum"] == ["company"]
            await _ask_engineering(session)
            listed = await session.call_tool("list_templates", {})
            assert [a["name"] for a in listed.structured_content["adapters"]] == ["hr", "sales", "company"]
            denied = await session.call_tool("ask", {"question": "headcount per department", "adapter": "hr"})
            assert tool_error(denied) == "forbidden"

            # a reload that adds a template: the session is told, and the new tool description has it
            write(
                config.parent / "templates" / "hr" / "zz_extra.yaml",
                """
                templates:
                  - id: parking_spaces
                    description: Parking spaces assigned to employees at the head office
                    nl_examples: ["who has a parking space?"]
                    sql: "SELECT first_name FROM employees LIMIT 1"
                """,
            )
            status = await holder.reload()
            assert status.ok
            await asyncio.wait_for(changed.wait(), 10)
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert "Parking spaces assigned to employees" in tools["ask"].description

        # the MCP questions went through the same observers as the JSON API: they are counted (and logged)
        metrics = await (await client.get("/metrics", headers={"X-API-Key": "admin-k"})).text()
        executed = [
            s.value
            for family in text_string_to_metric_families(metrics)
            for s in family.samples
            if s.name == "intent_router_decisions_total"
            and s.labels == {"kind": "query", "outcome": "executed", "adapter": "company"}
        ]
        assert executed == [1.0]

        async with _client(url, "hr-k") as (read, write_stream), ClientSession(read, write_stream) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert tools["ask"].input_schema["properties"]["adapter"]["enum"] == ["hr"]
            assert "(sales)" not in tools["ask"].description
            listed = await session.call_tool("list_templates", {})
            assert [a["name"] for a in listed.structured_content["adapters"]] == ["hr"]
            assert all("sales" not in t["id"] for t in listed.structured_content["adapters"][0]["templates"])
            denied = await session.call_tool("list_templates", {"adapter": "sales"})
            assert tool_error(denied) == "forbidden"
            denied = await session.call_tool("ask", {"question": "top 5 customers by revenue", "adapter": "sales"})
            assert tool_error(denied) == "forbidden"
            result = await session.call_tool("ask", {"question": "how many employees are in Engineering?"})
            # no adapter named: the default is the composite, which this key may not query
            assert tool_error(result) == "forbidden"
            result = await session.call_tool("ask", {"question": "count the engineers we employ", "adapter": "hr"})
            assert result.structured_content["metadata"]["status"] == "executed"


SESSION_AUTH = """
embedding:
  provider: minilm
  cache: {enabled: true, path: data/embedding_cache.sqlite3}
store: {backend: memory}
auth:
  client_keys:
    - {name: one, key_env: IR_MCP_ONE_KEY}
    - {name: two, key_env: IR_MCP_TWO_KEY}
  stats_key_env: IR_MCP_STATS_KEY
"""


async def test_http_session_belongs_to_its_key(tmp_path, monkeypatch):
    from server.testing.configs import people_tree

    monkeypatch.setenv("IR_MCP_ONE_KEY", "one-k")
    monkeypatch.setenv("IR_MCP_TWO_KEY", "two-k")
    monkeypatch.setenv("IR_MCP_STATS_KEY", "stats-k")
    async with running_app(people_tree(tmp_path, SESSION_AUTH)) as (client, _):
        resp = await client.post("/mcp", json=INIT, headers={**ACCEPT, "X-API-Key": "stats-k"})
        assert resp.status == 403 and (await resp.json())["error"]["code"] == "forbidden"
        resp = await client.post("/mcp", json=INIT, headers={**ACCEPT, "X-API-Key": "one-k"})
        assert resp.status == 200
        await resp.read()
        session_id = resp.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        headers = {**ACCEPT, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
        resp = await client.post("/mcp", json=listing, headers={**headers, "X-API-Key": "two-k"})
        assert resp.status == 404  # another key cannot use this session
        resp = await client.post("/mcp", json=listing, headers={**headers, "X-API-Key": "one-k"})
        assert resp.status == 200
        assert '"name":"ask"' in (await resp.text()).replace(" ", "")


async def test_http_stateless_for_several_workers(tmp_path):
    """With `serve --workers N` the endpoint is stateless: any request stands alone (no session to lose
    when the next connection lands in another worker), and the SDK client still works."""
    from aiohttp.test_utils import TestClient, TestServer

    from server.mcp.http import MCP
    from server.runtime.holder import RuntimeHolder
    from server.testing.configs import people_tree
    from server.web.app import create_app

    holder = RuntimeHolder(people_tree(tmp_path))
    await holder.start()
    app = create_app(holder)
    app[MCP].several_workers = True
    client = TestClient(TestServer(app, host="127.0.0.1", port=0))
    await client.start_server()
    try:
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        headers = {**ACCEPT, "mcp-protocol-version": "2025-11-25"}
        resp = await client.post("/mcp", json=listing, headers=headers)  # no initialize, no session id
        assert resp.status == 200 and "mcp-session-id" not in resp.headers
        assert '"name":"ask"' in (await resp.text()).replace(" ", "")
        url = str(client.make_url("/mcp"))
        async with _client(url, None) as (read, write_stream), ClientSession(read, write_stream) as session:
            await session.initialize()
            result = await session.call_tool("ask", {"question": "headcount per department"})
            assert result.structured_content["metadata"]["status"] == "executed"
    finally:
        await client.close()
        await holder.close()


async def test_stdio_reload_on_file_change_sends_list_changed(tmp_path):
    """`run.py mcp` watches the YAML files like the HTTP server: a saved change reloads and the assistant is told."""
    from server.testing.configs import people_tree

    config = people_tree(tmp_path)
    params = StdioServerParameters(command=sys.executable, args=[str(REPO / "run.py"), "mcp", "--config", str(config)])
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with (
        stdio_client(params) as (read, write_stream),
        ClientSession(read, write_stream, message_handler=on_message) as session,
    ):
        await asyncio.wait_for(session.initialize(), 120)
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "Parking spaces" not in tools["ask"].description
        library = """
            templates:
              - id: parking
                description: Parking spaces of the people
                nl_examples: ["who has a parking space?"{more}]
                sql: "SELECT name FROM people"
            """
        for attempt in range(3):  # the watcher starts just after the server: a save before that is not seen
            write(tmp_path / "templates" / "people" / "zz_parking.yaml", library.format(more=', "x"' * attempt))
            try:
                await asyncio.wait_for(changed.wait(), 10)
                break
            except TimeoutError:
                continue
        assert changed.is_set()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "Parking spaces of the people (people)" in tools["ask"].description


async def test_a_server_stopped_before_the_sdk_loaded_logs_no_error(tmp_path, caplog):
    """The SDK loads in the background after the server listens; a server stopped before it finished
    (tests, a quick restart) is a normal stop, not 'MCP could not start'."""
    import logging

    from server.mcp.http import MCPEndpoint
    from server.runtime.holder import RuntimeHolder
    from server.testing.configs import people_tree

    holder = RuntimeHolder(people_tree(tmp_path))
    await holder.start()
    try:
        endpoint = MCPEndpoint(holder, [])
        with caplog.at_level(logging.INFO):
            await endpoint.start()
            await endpoint.stop()  # before the background task has even run: it finds itself stopped
        assert endpoint._ready is not None and endpoint._ready.done()
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("intent_router")]
    finally:
        await holder.close()


async def test_an_unexpected_failure_is_a_tool_error_without_its_text(tmp_path, caplog):
    """As the JSON API answers 500 `internal_error`: a failure that is not one of ours (here: the holder
    asked before any configuration was loaded) is logged, and the assistant gets a tool error that does
    not carry the exception's own text."""
    from server.auth import Principal
    from server.mcp.tools import call_tool
    from server.runtime.holder import RuntimeHolder

    holder = RuntimeHolder(warm_demo_tree(tmp_path))  # never started: no configuration loaded
    principal = Principal(name="assistant", role="client")
    result = await call_tool(holder, principal, "ask", {"question": "how many employees are in Engineering?"})
    assert tool_error(result) == "internal_error"
    assert json.loads(result.content[0].text)["error"]["message"] == "internal server error"
    assert "no configuration loaded" not in str(result.content)
    assert "unhandled error in MCP tool ask" in caplog.text


async def test_a_message_that_is_no_json_rpc_is_refused_without_repeating_it(tmp_path):
    """The SDK's validation errors quote the message back (and link pydantic's pages); /mcp refuses a
    body that is not one JSON-RPC 2.0 message itself, with a JSON-RPC error naming what is wrong."""
    from server.testing.configs import people_tree

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    bodies = {
        b"not json LEAKME": -32700,
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": "LEAKME"}]': -32600,  # a batch
        b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list", "secret": "LEAKME"}': -32600,
        b'{"jsonrpc": "2.0", "id": 1, "params": {"LEAKME": 1}}': -32600,  # no method
        b'{"jsonrpc": "2.0", "id": {"LEAKME": 1}, "method": "ping"}': -32600,
    }
    async with running_app(people_tree(tmp_path)) as (client, _):
        for _ in range(100):  # the SDK loads in the background after the start
            if (await (await client.get("/health")).json())["mcp"]["status"] == "ok":
                break
            await asyncio.sleep(0.05)
        for body, code in bodies.items():
            resp = await client.post("/mcp", data=body, headers=headers)
            text = await resp.text()
            assert resp.status == 400, body
            assert (await resp.json())["error"]["code"] == code
            assert "LEAKME" not in text and "pydantic" not in text
        ok = await client.post("/mcp", json=INIT, headers=headers)
        assert ok.status == 200
        await ok.read()


async def test_results_match_their_declared_schemas_and_say_everything_once(demo_config_dir):
    """Each tool's structured content validates against the outputSchema it declares (an error has none:
    see tool_error), every `ask` answer carries its `status` at the top, and the text gives the summary and
    the table once, not the rows again as JSON after it."""
    from jsonschema import Draft202012Validator

    from server.auth import Principal, Role
    from server.mcp.tools import call_tool, tool_list
    from server.runtime.holder import RuntimeHolder

    holder = RuntimeHolder(demo_config_dir)
    await holder.start()
    try:
        admin = Principal("anonymous", Role.ADMIN)
        schemas = {tool.name: Draft202012Validator(tool.output_schema) for tool in tool_list(holder, admin)}
        calls = [
            ("ask", {"question": "how many employees are in Engineering?"}, "executed"),
            ("ask", {"question": "who earns more than?", "adapter": "hr"}, "needs_clarification"),
            ("ask", {"question": "what is the boiling point of mercury?"}, "no_match"),
            ("ask", {"question": "list employees earning more than 30000", "adapter": "hr"}, "executed"),
            ("explain_routing", {"question": "top 5 customers by revenue"}, None),
            ("list_templates", {"adapter": "hr"}, None),
        ]
        results = []
        for name, arguments, status in calls:
            result = await call_tool(holder, admin, name, arguments)
            assert not result.is_error, result.content
            errors = [e.message for e in schemas[name].iter_errors(result.structured_content)]
            assert errors == [], (name, arguments, errors[:3])
            if status is not None:
                body = result.structured_content
                assert body["status"] == body["metadata"]["status"] == status, arguments
            results.append(result)
    finally:
        await holder.close()

    many = results[3]
    rows = many.structured_content["rows"]
    text = many.content[0].text
    assert len(rows) > 50
    assert many.structured_content["content"] in text and "rows (JSON)" not in text
    assert json.dumps(rows[0], ensure_ascii=False)[:40] not in text  # the rows are not repeated as JSON
    for row in rows[:50]:  # each row of the table once
        name = f"{row['first_name']} | {row['last_name']} | {row['department']}"
        assert text.count(name) == sum(
            1 for r in rows[:50] if (r["first_name"], r["last_name"], r["department"]) == tuple(name.split(" | "))
        )
    assert f"the table shows 50 of the {len(rows)} rows; all are in the structured content" in text
    assert "session_id: " in text and text.count("session_id: ") == 1
