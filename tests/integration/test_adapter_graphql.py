"""GraphQL adapter against a real strawberry server on loopback."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.adapters.graphql import parse_graphql_body
from server.errors import QueryFailed, SourceUnavailable
from server.params.values_from import adapter_values_runner
from server.testing.adapter_harness import started
from server.testing.graphql_api import running_graphql_api
from server.testing.servers import free_port

FLIGHTS_QUERY = """
query Flights($origin: String!, $maxPrice: Float) {
  flights(origin: $origin, maxPrice: $maxPrice) { number destination price airline }
}
"""

LIBRARY = f"""
templates:
  - id: flights_from
    description: Flights leaving an airport under a price
    parameters:
      - {{name: origin, type: string, required: true}}
      - {{name: max_price, type: number}}
    graphql:
      query: |{FLIGHTS_QUERY.replace(chr(10), chr(10) + "        ")}
      variables: {{origin: {{$param: origin}}, maxPrice: "{{{{max_price}}}}"}}
      response: {{items_path: flights, fields: {{flight: number, to: destination, price: price}}}}
  - id: airport_name
    description: The name of an airport
    parameters:
      - {{name: code, type: string, required: true}}
    graphql:
      query: "query($code: String!) {{ airport(code: $code) {{ code name }} }}"
      variables: {{code: {{$param: code}}}}
      response: {{items_path: airport}}
  - id: echo
    description: Echo a text
    parameters:
      - {{name: text, type: string, required: true}}
    graphql:
      query: "query Echo($text: String!) {{ echo(text: $text) {{ text }} }}"
      variables: {{text: {{$param: text}}}}
      response: {{items_path: echo}}
  - id: broken
    description: A field that fails on the server
    graphql:
      query: "{{ broken {{ number }} }}"
      response: {{items_path: broken}}
  - id: invalid_field
    description: A query the server's schema rejects
    graphql:
      query: "{{ flights(origin: \\"LHR\\") {{ nonsense }} }}"
      response: {{items_path: flights}}
"""


def settings_for(api, **extra):
    return {
        "name": "flights",
        "type": "graphql",
        "connection": {"url": api.url},
        "retries": {"backoff_initial": 0.01, "backoff_max": 0.05},
        **extra,
    }


async def test_query_with_variables_and_field_mapping(tmp_path):
    async with running_graphql_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["flights_from"], {"origin": "LHR", "max_price": 500.0})
        sent = api.received[-1]
    assert sent["variables"] == {"origin": "LHR", "maxPrice": 500.0}
    assert sent["query"] == adapter.templates["flights_from"].body.query
    assert result.rows == [
        {"flight": "BA303", "to": "CDG", "price": 120.0},
        {"flight": "VS3", "to": "JFK", "price": 480.0},
    ]


async def test_optional_variable_absent_is_null_and_single_object_reply(tmp_path):
    async with running_graphql_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        everything = await adapter.execute(adapter.templates["flights_from"], {"origin": "LHR"})
        airport = await adapter.execute(adapter.templates["airport_name"], {"code": "FRA"})
        nothing = await adapter.execute(adapter.templates["airport_name"], {"code": "XXX"})
        assert api.received[0]["variables"] == {"origin": "LHR", "maxPrice": None}
    assert len(everything.rows) == 3
    assert airport.rows == [{"code": "FRA", "name": "Frankfurt"}]
    assert nothing.rows == []


async def test_errors_in_a_200_reply_are_a_clear_error_without_server_text(tmp_path):
    async with running_graphql_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as info:
            await adapter.execute(adapter.templates["broken"], {})
        with pytest.raises(QueryFailed) as invalid:
            await adapter.execute(adapter.templates["invalid_field"], {})
    assert info.value.message == "adapter 'flights': template 'broken': the GraphQL server returned 1 error"
    assert "hunter2" not in info.value.message
    assert "returned 1 error" in invalid.value.message and "nonsense" not in invalid.value.message


async def test_retries_then_bounded(tmp_path):
    async with running_graphql_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        api.failures = [503]
        result = await adapter.run(adapter.templates["airport_name"], {"code": "LHR"})
        assert result.rows[0]["name"] == "London Heathrow"
        api.failures = [503, 503, 503, 503]
        with pytest.raises(SourceUnavailable, match=r"HTTP 503 \(after 3 attempts\)"):
            await adapter.run(adapter.templates["airport_name"], {"code": "LHR"})


async def test_server_down_is_503(tmp_path):
    settings = {
        "name": "flights",
        "type": "graphql",
        "connection": {"url": f"http://127.0.0.1:{free_port()}/graphql"},
        "retries": {"max_attempts": 1},
    }
    async with started(tmp_path, settings, LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable) as info:
            await adapter.execute(adapter.templates["airport_name"], {"code": "LHR"})
    assert info.value.status == 503 and info.value.message == "adapter 'flights': cannot reach the source"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": 'mutation { deleteFlight(number: "BA117") }'}, "read-only: mutation"),
        ({"query": 'query { airport(code: "{{code}}") { name } }'}, "cannot contain placeholders"),
        ({"query": "query($a: String) { airport(code: $a) { name } }", "variables": {"b": 1}}, "not declared"),
        ({"query": "query { airport(code: "}, "does not parse"),
        ({"query": "query A { a } query B { b }"}, "exactly one operation"),
        ({"query": "{ a }", "response": {"items_path": "{{p}}"}}, "response cannot contain placeholders"),
    ],
)
def test_template_guard(body, message):
    with pytest.raises(ValueError, match=message):
        parse_graphql_body(body)


hostile_text = st.one_of(
    st.sampled_from(
        [
            '") { name } mutation { deleteFlight(number: "BA117") } #',
            "... on Flight { price }",
            "$origin",
            "{{text}}",
            '{"$gt": ""}',
            "../../",
            "x" * 5000,
            "ä😀\u202e",
            "\\u0000",
        ]
    ),
    st.text(max_size=200),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=hostile_text)
async def test_hostile_values_travel_only_as_variables(tmp_path, value):
    async with running_graphql_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["echo"], {"text": value})
        sent = api.received[-1]
    assert sent == {"query": "query Echo($text: String!) { echo(text: $text) { text } }", "variables": {"text": value}}
    assert result.rows == [{"text": value}]


async def test_a_values_list_is_not_cut_by_max_rows(tmp_path):
    query = {"query": '{ flights(origin: "LHR") { number } }', "response": {"items_path": "flights"}}
    async with running_graphql_api() as api, started(tmp_path, settings_for(api, max_rows=1), LIBRARY) as adapter:
        listed = await adapter_values_runner(adapter)("numbers.values", query, 1000)
    assert len(listed.rows) == 3 and not listed.truncated  # the three flights from LHR
