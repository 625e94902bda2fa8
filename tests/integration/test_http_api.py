"""The HTTP contract over a real server on loopback: answers, JSON errors, no leaks."""

from __future__ import annotations

import pytest

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_tree, people_tree


def assert_error(body: dict, code: str) -> str:
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    message = body["error"]["message"]
    assert "Traceback" not in message and "sqlite3" not in message.lower()
    return message


async def test_query_returns_rows_and_metadata(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        resp = await client.post(
            "/v1/query", json={"query": "who works in the Engineering department?", "adapter": "people"}
        )
        assert resp.status == 200
        body = await resp.json()
        assert body["metadata"]["template_id"] == "people_in_department"
        assert body["metadata"]["parameters"] == {"department": "Engineering"}
        assert body["rows"] == [{"name": "Ada"}, {"name": "Grace"}]
        assert "Ada" in body["content"] and 0 < body["confidence"] <= 1
        assert body["status"] == body["metadata"]["status"] == "executed"  # at the top of every answer


async def test_default_adapter_is_used_when_none_named(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        resp = await client.post("/v1/query", json={"query": "headcount per department please"})
        body = await resp.json()
        assert body["metadata"]["adapter"] == "people"
        assert body["metadata"]["template_id"] == "headcount_by_department"


@pytest.mark.parametrize(
    "payload, fragment",
    [
        (b"not json", "must be JSON"),
        (b"[1, 2]", "JSON object"),
        (b"{}", "query"),
        (b'{"query": ""}', "query"),
        (b'{"query": "   "}', "blank"),
        (b'{"query": "\\u200b\\ufeff\\u200d"}', "blank"),  # invisible characters only
        (b'{"query": 42}', "query"),
        (b'{"query": "x", "adaptr": "people"}', "adaptr: unknown field"),
        (b'{"query": "x", "adapter": ""}', "adapter: String should match pattern"),  # not the default
        (b'{"query": "x", "adapter": "\\ud800"}', "adapter: Input should be a valid string"),
        (b'{"query": "x", "adapter": "../hr"}', "adapter: String should match pattern"),
        (b'{"query": "x", "adapter": "' + b"a" * 5000 + b'"}', "adapter: String should have at most 200"),
    ],
)
async def test_bad_requests_get_400_with_message(tmp_path, payload, fragment):
    async with running_app(people_tree(tmp_path)) as (client, _):
        resp = await client.post("/v1/query", data=payload, headers={"Content-Type": "application/json"})
        assert resp.status == 400
        assert fragment in assert_error(await resp.json(), "bad_request")


async def test_too_long_question_is_400(tmp_path):
    config = BASE_CONFIG + "server: {max_question_chars: 20}\n"
    async with running_app(people_tree(tmp_path, config)) as (client, _):
        resp = await client.post("/v1/query", json={"query": "x" * 21})
        assert resp.status == 400
        assert "longer than 20" in assert_error(await resp.json(), "bad_request")
        # 2 characters as asked, 36 once normalised (NFKC spells U+FDFA out): routing would see the 36
        resp = await client.post("/v1/test_routing", json={"query": "\ufdfa\ufdfa"})
        assert resp.status == 400
        assert "longer than 20" in assert_error(await resp.json(), "bad_request")


async def test_unknown_adapter_is_404_and_unknown_route_is_json(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        resp = await client.post("/v1/query", json={"query": "hello", "adapter": "nope"})
        assert resp.status == 404
        assert "nope" in assert_error(await resp.json(), "not_found")
        resp = await client.get("/v1/nothing-here")
        assert resp.status == 404
        assert_error(await resp.json(), "not_found")


async def test_no_match_executes_nothing(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        resp = await client.post("/v1/query", json={"query": "what is the boiling point of mercury?"})
        body = await resp.json()
        assert resp.status == 200
        assert body["rows"] == []
        assert body["status"] == body["metadata"]["status"] == "no_match"
        assert body["metadata"]["reason"] == "no_matches_above_threshold"


async def test_source_down_is_503_naming_adapter(tmp_path):
    config_dir = people_tree(tmp_path)
    async with running_app(config_dir) as (client, _):
        (tmp_path / "templates" / "people.db").unlink()
        resp = await client.post("/v1/query", json={"query": "headcount per department"})
        assert resp.status == 503
        message = assert_error(await resp.json(), "source_unavailable")
        assert "'people'" in message


async def test_slow_query_is_504_naming_adapter(tmp_path):
    library = (
        PEOPLE_LIBRARY
        + """
  - id: slow_report
    description: Compute the enormous slow statistical report
    nl_examples: ["run the enormous slow statistical report"]
    sql: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"
"""
    )
    adapter = PEOPLE_ADAPTER + "    query_timeout: 0.3\n"
    from server.testing.configs import make_people_db

    make_people_db(tmp_path / "templates" / "people.db")
    config_dir = make_tree(tmp_path, adapters={"people.yaml": adapter}, libraries={"people/p.yaml": library})
    async with running_app(config_dir) as (client, _):
        resp = await client.post("/v1/query", json={"query": "run the enormous slow statistical report"})
        assert resp.status == 504
        assert "'people'" in assert_error(await resp.json(), "source_timeout")


async def test_health_reports_adapters_and_config(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        body = await (await client.get("/health")).json()
        assert body["status"] == "ok"
        assert body["adapters"]["people"]["status"] == "ok"
        assert body["config"]["last_load"]["ok"] is True


async def test_test_routing_executes_nothing_and_lists_candidates(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        body = await (await client.post("/v1/test_routing", json={"query": "who works in Sales?"})).json()
        assert body["routing_decision"]["selected_template"] == "people_in_department"
        assert body["total_matches"] == len(body["all_matches"]) == 3
        assert "rows" not in body
