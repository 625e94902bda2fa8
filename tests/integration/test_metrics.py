"""GET /metrics: scraped from a live test server after real queries and parsed with prometheus_client's
own parser. Two apps in one process keep separate registries."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from server.embedding.factory import _MODELS, MODEL_ID
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_people_db, make_tree, write

BROKEN_LIBRARY = """
templates:
  - id: unicorns_in_stable
    description: List the unicorns living in the stable
    nl_examples: ["which unicorns live in the stable?", "show me the unicorns"]
    sql: "SELECT name FROM people WHERE json_extract('{unicorns', '$.stable') IS NOT NULL"
"""  # plans fine (a load checks every template against its database), fails as it runs: malformed JSON

CONFIG = (
    BASE_CONFIG
    + """
stats: {enabled: true, path: data/routing_log.sqlite3}
auth:
  client_keys: [{name: chat, key_env: IR_M_CHAT_KEY}]
  stats_key_env: IR_M_STATS_KEY
"""
)
CHAT = {"X-API-Key": "chat-k"}
STATS = {"X-API-Key": "stats-k"}


def tree(root):
    make_people_db(root / "templates" / "people.db")
    return make_tree(
        root,
        CONFIG,
        {"people.yaml": PEOPLE_ADAPTER},
        {"people/people.yaml": PEOPLE_LIBRARY, "people/broken.yaml": BROKEN_LIBRARY},
    )


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def value(found, name: str, **labels) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def scrape(client) -> dict:
    resp = await client.get("/metrics", headers=STATS)
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/plain; version=")
    return samples(await resp.text())


async def test_metrics_after_queries(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_M_CHAT_KEY", "chat-k")
    monkeypatch.setenv("IR_M_STATS_KEY", "stats-k")
    config = tree(tmp_path / "a")
    async with running_app(config) as (client, holder), running_app(tree(tmp_path / "b")) as (other, _):
        assert (await client.get("/metrics")).status == 401
        assert (await client.get("/metrics", headers=CHAT)).status == 403
        for _ in range(3):
            resp = await client.post("/v1/query", json={"query": "headcount per department"}, headers=CHAT)
            assert resp.status == 200
        resp = await client.post("/v1/query", json={"query": "who works in the department?"}, headers=CHAT)
        assert (await resp.json())["metadata"]["status"] == "needs_clarification"
        resp = await client.post("/v1/query", json={"query": "which unicorns live in the stable?"}, headers=CHAT)
        assert resp.status == 502  # a query the database refuses as it runs fails (the source itself is up)
        resp = await client.post("/v1/test_routing", json={"query": "Who works in Sales?"}, headers=CHAT)
        assert resp.status == 200
        assert (await client.post("/v1/query", json={"query": ""}, headers=CHAT)).status == 400
        assert (await client.post("/v1/query", json={"query": "x", "adapter": "nope"}, headers=CHAT)).status == 404
        assert (await client.get("/no/such/path")).status == 404
        ok = await holder.reload()
        write(config / "adapters" / "people.yaml", PEOPLE_ADAPTER.replace("confidence_threshold", "confidense"))
        bad = await holder.reload(trigger="watch")
        assert ok.ok and not bad.ok

        found = await scrape(client)
        total = "intent_router_http_requests_total"
        assert value(found, total, endpoint="/v1/query", method="POST", status="200") == 4
        assert value(found, total, endpoint="/v1/query", method="POST", status="502") == 1
        assert value(found, total, endpoint="/v1/query", method="POST", status="400") == 1
        assert value(found, total, endpoint="/v1/query", method="POST", status="404") == 1
        assert value(found, total, endpoint="/v1/test_routing", method="POST", status="200") == 1
        assert value(found, total, endpoint="unmatched", method="GET", status="404") == 1
        assert value(found, total, endpoint="/metrics", method="GET", status="401") == 1
        assert value(found, "intent_router_http_request_duration_seconds_count", endpoint="/v1/query") == 7

        decisions = "intent_router_decisions_total"
        assert value(found, decisions, kind="query", outcome="executed", adapter="people") == 3
        assert value(found, decisions, kind="query", outcome="needs_clarification", adapter="people") == 1
        assert value(found, decisions, kind="test_routing", outcome="routed", adapter="people") == 1

        for stage in ("embed", "search", "decision", "total", "parameters", "execute"):
            assert value(found, "intent_router_stage_duration_seconds_count", stage=stage) >= 3, stage
        assert value(found, "intent_router_source_query_duration_seconds_count", source="people") == 3
        assert value(found, "intent_router_source_query_duration_seconds_sum", source="people") > 0
        assert value(found, "intent_router_source_failures_total", source="people", code="query_failed") == 1

        assert value(found, "intent_router_reloads_total", trigger="admin", result="ok") == 1
        assert value(found, "intent_router_reloads_total", trigger="watch", result="rejected") == 1
        assert value(found, "intent_router_config_generation") == holder.generation

        assert ("intent_router_routing_log_queue_length", ()) in found
        assert value(found, "intent_router_routing_log_queue_capacity") > 0
        assert value(found, "intent_router_routing_log_dropped_total") == 0

        # questions went through the encoder's micro-batcher: calls and the questions they carried, per model
        batches = {
            labels: v for (name, labels), v in found.items() if name == "intent_router_encoder_question_batches_total"
        }
        carried = {labels: v for (name, labels), v in found.items() if name == "intent_router_encoder_questions_total"}
        assert len(batches) == 1 and next(iter(batches))[0][0] == "model"
        assert sum(batches.values()) >= 1 and sum(carried.values()) >= sum(batches.values())
        # and the encoder's lanes: how many are open (read at scrape time) and the calls they ran
        [labels] = batches
        lanes = {key: v for (name, key), v in found.items() if name == "intent_router_encoder_lanes"}
        assert lanes == {labels: _MODELS[MODEL_ID].lanes}
        lane_calls = value(found, "intent_router_encoder_lane_question_batches_total", **dict(labels))
        assert 0 <= lane_calls <= batches[labels]

        # the other app in this process counted only its own scrape
        theirs = await scrape(other)
        assert value(theirs, decisions, kind="query", outcome="executed", adapter="people") == 0
        assert value(theirs, "intent_router_reloads_total", trigger="admin", result="ok") == 0
