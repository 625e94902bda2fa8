"""Elasticsearch adapter: the real async client against a loopback stand-in that checks the exact body."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.adapters.elasticsearch import parse_es_body
from server.errors import QueryFailed, SourceTimeout, SourceUnavailable
from server.params.values_from import adapter_values_runner
from server.testing.adapter_harness import started
from server.testing.es_standin import running_es_standin
from server.testing.servers import free_port

LIBRARY = """
templates:
  - id: open_tickets_for_product
    description: Open tickets of one product
    parameters:
      - {name: product, type: string, required: true}
      - {name: limit, type: integer, default: 20}
    elasticsearch:
      index: tickets
      body:
        size: {$param: limit}
        query:
          bool:
            filter:
              - {term: {product: {$param: product}}}
              - {term: {status: open}}
      fields: {ticket: _id, title: title, priority: priority}
  - id: tickets_mentioning
    description: Tickets whose title mentions words
    parameters:
      - {name: words, type: string, required: true}
    elasticsearch:
      index: tickets
      body: {query: {match: {title: "{{words}}"}}, size: 5}
      fields: [title]
  - id: hours_by_product
    description: Tickets and average hours per product
    parameters:
      - {name: min_hours, type: integer, default: 0}
    elasticsearch:
      index: tickets
      body:
        size: 0
        query: {range: {hours: {gte: {$param: min_hours}}}}
        aggs:
          by_product:
            terms: {field: product}
            aggs: {avg_hours: {avg: {field: hours}}}
      aggregation: by_product
  - id: missing_index
    description: An index that does not exist
    elasticsearch: {index: nowhere, body: {query: {match_all: {}}}}
"""


def settings_for(es, **extra):
    retries = {"max_attempts": 2, "backoff_initial": 0.01, "backoff_max": 0.05}
    return {"name": "support", "type": "elasticsearch", "connection": {"url": es.url}, "retries": retries, **extra}


async def test_filter_with_placeholders_sends_the_exact_body(tmp_path):
    async with running_es_standin() as es, started(tmp_path, settings_for(es), LIBRARY) as adapter:
        es.expected = {
            "size": 20,
            "query": {"bool": {"filter": [{"term": {"product": "billing"}}, {"term": {"status": "open"}}]}},
        }
        template = adapter.templates["open_tickets_for_product"]
        result = await adapter.execute(template, {"product": "billing", "limit": 20})
        assert es.received[-1]["index"] == "tickets"
        assert es.received[-1]["headers"]["Accept"].startswith("application/vnd.elasticsearch+json")
    assert result.rows == [
        {"ticket": "T2", "title": "Invoice PDF is blank", "priority": "medium"},
        {"ticket": "T4", "title": "Refund not applied", "priority": "high"},
    ]


async def test_aggregation_buckets_become_rows(tmp_path):
    async with running_es_standin() as es, started(tmp_path, settings_for(es), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["hours_by_product"], {"min_hours": 3})
        assert es.received[-1]["body"]["query"] == {"range": {"hours": {"gte": 3}}}
    assert result.rows == [
        {"key": "portal", "doc_count": 2, "avg_hours": 6.5},
        {"key": "billing", "doc_count": 1, "avg_hours": 3.0},
        {"key": "reports", "doc_count": 1, "avg_hours": 13.0},
    ]


async def test_size_is_clamped_to_the_row_cap(tmp_path):
    async with running_es_standin() as es, started(tmp_path, settings_for(es, max_rows=1), LIBRARY) as adapter:
        template = adapter.templates["open_tickets_for_product"]
        result = await adapter.execute(template, {"product": "billing", "limit": 500})
        assert es.received[-1]["body"]["size"] == 2
    assert len(result.rows) == 1 and result.truncated


async def test_missing_parameter_is_an_error_not_match_all(tmp_path):
    async with running_es_standin() as es, started(tmp_path, settings_for(es), LIBRARY) as adapter:
        with pytest.raises(QueryFailed, match="parameter 'product' has no value"):
            await adapter.execute(adapter.templates["open_tickets_for_product"], {"limit": 5})
        assert es.received == []


async def test_api_errors_are_clear_and_leak_nothing(tmp_path):
    async with running_es_standin() as es, started(tmp_path, settings_for(es), LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as missing:
            await adapter.execute(adapter.templates["missing_index"], {})
        es.failures = [503, 503]
        with pytest.raises(SourceUnavailable) as busy:
            await adapter.run(adapter.templates["missing_index"], {})
        assert len(es.received) == 3  # one retry (retries.max_attempts: 2), then the clear error
    assert missing.value.message == "adapter 'support': template 'missing_index': Elasticsearch answered HTTP 404"
    assert busy.value.status == 503
    assert busy.value.message == "adapter 'support': Elasticsearch answered HTTP 503 (after 2 attempts)"


async def test_timeout_is_504_and_down_is_503(tmp_path):
    async with running_es_standin() as es:
        es.slow_seconds = 1.0
        async with started(tmp_path, settings_for(es, query_timeout=0.2), LIBRARY) as adapter:
            with pytest.raises(SourceTimeout) as slow:
                await adapter.execute(adapter.templates["missing_index"], {})
    assert slow.value.status == 504 and "'support'" in slow.value.message
    down = {
        "name": "support",
        "type": "elasticsearch",
        "connection": {"url": f"http://127.0.0.1:{free_port()}"},
    }
    async with started(tmp_path, down, LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable) as info:
            await adapter.execute(adapter.templates["missing_index"], {})
        assert (await adapter.health())["status"] == "down"
    assert info.value.message == "adapter 'support': cannot reach Elasticsearch"


async def test_api_key_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_TEST_ES_KEY", "a2V5")
    async with running_es_standin() as es:
        settings = settings_for(es)
        settings["connection"]["api_key_env"] = "IR_TEST_ES_KEY"
        async with started(tmp_path, settings, LIBRARY) as adapter:
            await adapter.execute(adapter.templates["tickets_mentioning"], {"words": "login"})
        assert es.received[-1]["headers"]["Authorization"] == "ApiKey a2V5"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"index": "{{idx}}", "body": {}}, "index cannot contain placeholders"),
        ({"index": "t", "body": {"query": {"query_string": {"query": "{{q}}"}}}}, "query_string"),
        ({"index": "t", "body": {"script_fields": {"x": {"script": {"source": "{{code}}"}}}}}, "script code"),
        ({"index": "t", "body": {"query": {"match": {"title": "about {{q}}"}}}}, "whole value"),
        ({"index": "t", "body": {}, "aggregation": "nope"}, "not defined"),
        ({"index": "../x", "body": {}}, "String should match pattern"),
    ],
)
def test_template_guard(body, message):
    with pytest.raises(ValueError, match=message):
        parse_es_body(body)


hostile_text = st.one_of(
    st.sampled_from(
        [
            '" } }, "query": {"match_all": {}} }',
            "title:* OR *:*",
            '{"$gt": ""}',
            "../_all",
            "{{words}}",
            "x" * 5000,
            "ä😀\u202e",
            '\\"',
            "... on T { id }",
        ]
    ),
    st.text(min_size=1, max_size=200),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=hostile_text)
async def test_hostile_values_are_literal_in_the_exact_body(tmp_path, value):
    async with running_es_standin() as es, started(tmp_path, settings_for(es), LIBRARY) as adapter:
        es.expected = {"query": {"match": {"title": value}}, "size": 5}
        result = await adapter.execute(adapter.templates["tickets_mentioning"], {"words": value})
        assert es.received[-1]["index"] == "tickets"
    expected_titles = [
        t["title"]
        for t in es.docs["tickets"]
        if value.lower().split() and all(w in t["title"].lower().split() for w in value.lower().split())
    ]
    assert [r["title"] for r in result.rows] == expected_titles


async def test_a_values_list_clamps_size_to_its_own_cap_not_max_rows(tmp_path):
    query = {"index": "tickets", "body": {"size": 500, "query": {"match_all": {}}}, "fields": ["ticket"]}
    async with running_es_standin() as es, started(tmp_path, settings_for(es, max_rows=1), LIBRARY) as adapter:
        listed = await adapter_values_runner(adapter)("tickets.values", query, 100)
        assert es.received[-1]["body"]["size"] == 101
    assert len(listed.rows) > 1 and not listed.truncated
