"""A fan-out answer's source queries and failures in /metrics (issue 31: only route-once answers were counted):
each source's query time and status, a timed-out source's failure by code, and, when no source answered,
every source's failure instead of one series named after the whole error text."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, make_tree
from server.testing.customer import LIBRARIES, QUESTION, customer_tree, make_crm, running_support_desk

QUERIES = "intent_router_source_query_duration_seconds_count"
FAILURES = "intent_router_source_failures_total"
FANNED = "intent_router_fan_out_source_queries_total"


async def scrape(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    resp = await client.get("/metrics")
    assert resp.status == 200
    found = {}
    for family in text_string_to_metric_families(await resp.text()):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def value(found, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_each_source_of_a_fan_out_answer_is_counted(tmp_path, mongo_server):
    async with running_support_desk() as desk:
        desk.slow_seconds = 3.0  # past the support adapter's query_timeout (0.5 s)
        tree = customer_tree(tmp_path, mongo_server, desk.url, "    execution: fan_out\n")
        async with running_app(tree) as (client, _):
            resp = await client.post("/v1/query", json={"query": QUESTION, "adapter": "customer"})
            body = await resp.json()
            found = await scrape(client)
    assert resp.status == 200, body
    assert {s["adapter"]: s["status"] for s in body["source_stats"]} == {
        "crm": "ok",
        "orders": "ok",
        "support": "timeout",
    }
    for source in ("crm", "orders", "support"):
        assert value(found, QUERIES, source=source) == 1, source
    assert value(found, FANNED, source="crm", status="ok") == 1
    assert value(found, FANNED, source="orders", status="ok") == 1
    assert value(found, FANNED, source="support", status="timeout") == 1
    assert value(found, FAILURES, source="support", code="source_timeout") == 1
    assert value(found, FAILURES, source="crm", code="source_timeout") == 0


TWO_SOURCES = """
adapters:
  - name: crm
    type: sql
    connection: {{url: "sqlite:///templates/crm.db"}}
    templates: ["templates/crm/*.yaml"]
  - name: support
    type: http
    connection: {{url: "{support}"}}
    templates: ["templates/support/*.yaml"]
    query_timeout: 0.5
  - name: customer
    type: composite
    child_adapters: [crm, support]
    confidence_threshold: 0.45
    execution: fan_out
"""


async def test_when_no_source_answers_each_sources_failure_is_counted(tmp_path):
    make_crm(tmp_path / "templates" / "crm.db")
    libraries = {k: v for k, v in LIBRARIES.items() if k.split("/")[0] in ("crm", "support")}
    async with running_support_desk() as desk:
        desk.slow_seconds = 3.0
        tree = make_tree(tmp_path, BASE_CONFIG, {"sources.yaml": TWO_SOURCES.format(support=desk.url)}, libraries)
        async with running_app(tree) as (client, _):
            (tmp_path / "templates" / "crm.db").unlink()  # the CRM's database file is gone: a 503 source
            resp = await client.post("/v1/query", json={"query": QUESTION, "adapter": "customer"})
            body = await resp.json()
            found = await scrape(client)
    assert resp.status == 503 and body["error"]["code"] == "source_unavailable"
    assert body["error"]["message"].startswith("adapter 'customer': no source answered: crm: error")
    assert value(found, FAILURES, source="crm", code="source_unavailable") == 1
    assert value(found, FAILURES, source="support", code="source_timeout") == 1
    assert value(found, FANNED, source="crm", status="error") == 1
    assert value(found, FANNED, source="support", status="timeout") == 1
    failing = {dict(labels)["source"] for name, labels in found if name == FAILURES}
    assert failing == {"crm", "support"}  # no series named after the whole error text, none for the composite
