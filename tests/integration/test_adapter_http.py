"""HTTP JSON API adapter against a real aiohttp API on loopback."""

from __future__ import annotations

import base64

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.adapters.http import parse_http_body
from server.config.errors import ConfigError
from server.errors import QueryFailed, SourceTimeout, SourceUnavailable
from server.params.values_from import adapter_values_runner
from server.testing.adapter_harness import load_adapter, started
from server.testing.http_api import BOOKS, running_http_api
from server.testing.servers import free_port

LIBRARY = """
templates:
  - id: books_by_author
    description: Books written by an author
    parameters:
      - {name: author, type: string, required: true}
      - {name: limit, type: integer, default: 10}
    http:
      method: GET
      path: /api/books
      query: {author: "{{author}}", limit: {$param: limit}}
      response:
        items_path: data.items
        fields: {title: title, published: year}
  - id: books_in_genres
    description: Books in any of some genres
    parameters:
      - {name: genres, type: array, required: true}
    http:
      path: /api/books
      query: {genre: {$param: genres}}
      response: {items_path: data.items, fields: [title]}
  - id: book_by_isbn
    description: One book by its ISBN
    parameters:
      - {name: isbn, type: string, required: true}
    http:
      path: /api/books/{{isbn}}
      response: {items_path: book}
  - id: short_books_in_genre
    description: Search books of a genre with at most some pages
    parameters:
      - {name: genre, type: string, required: true}
      - {name: max_pages, type: integer, required: true}
    http:
      method: POST
      path: /api/books/search
      headers: {X-Client: intent-router-tests}
      body: {genre: {$param: genre}, max_pages: {$param: max_pages}}
      response: {items_path: results, fields: [title, pages]}
  - id: echo
    description: Echo a path segment, a query value and a body value
    parameters:
      - {name: value, type: string, required: true}
    http:
      method: POST
      path: /api/echo/{{value}}
      query: {q: {$param: value}}
      body: {nested: {text: {$param: value}}, list: ["fixed", {$param: value}]}
      response: {items_path: items}
  - id: html_page
    description: An endpoint that does not answer JSON
    http: {path: /api/html}
  - id: missing_items
    description: An items_path that the reply does not have
    http: {path: /api/books, response: {items_path: data.nothing}}
"""


def settings_for(api, **extra):
    connection = {"url": api.url, "connect_timeout": 1, **extra.pop("connection", {})}
    retries = {"backoff_initial": 0.01, "backoff_max": 0.05}
    return {"name": "books", "type": "http", "connection": connection, "retries": retries, **extra}


async def test_get_with_query_and_field_mapping(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["books_by_author"], {"author": "Jane Austen", "limit": 10})
        assert api.last().query == [("author", "Jane Austen"), ("limit", "10")]
    assert result.rows == [
        {"title": "Pride and Prejudice", "published": 1813},
        {"title": "Sense and Sensibility", "published": 1811},
    ]
    assert result.columns == ["title", "published"]


async def test_array_parameter_repeats_the_query_key(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["books_in_genres"], {"genres": ["satire", "romance"]})
        assert api.last().query == [("genre", "satire"), ("genre", "romance")]
    assert [r["title"] for r in result.rows] == ["Pride and Prejudice", "Sense and Sensibility", "Animal Farm"]


async def test_path_parameter_and_single_object_reply(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["book_by_isbn"], {"isbn": "9780451524935"})
    assert result.rows == [BOOKS[2]]


async def test_post_json_body_is_typed(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        result = await adapter.execute(
            adapter.templates["short_books_in_genre"], {"genre": "dystopia", "max_pages": 300}
        )
        received = api.last()
    assert received.json == {"genre": "dystopia", "max_pages": 300}
    assert received.headers["X-Client"] == "intent-router-tests"
    assert result.rows == [{"title": "Brave New World", "pages": 288}]


@pytest.mark.parametrize("value", ["../admin", "..", ".", "a/b?c=d#e", "%2e%2e", "x y", "ä😀"])
async def test_path_values_stay_one_segment(tmp_path, value):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        await adapter.execute(adapter.templates["echo"], {"value": value})
        received = api.last()
    assert received.raw_path.split("?")[0].count("/") == 3
    assert received.match == {"segment": value}
    assert received.query == [("q", value)]
    assert received.json == {"nested": {"text": value}, "list": ["fixed", value]}


async def test_retries_429_and_5xx_then_succeeds(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        api.failures["/api/books"] = [503, 429]
        result = await adapter.run(adapter.templates["books_by_author"], {"author": "George Orwell", "limit": 5})
        assert len(api.log) == 3
    assert len(result.rows) == 2


async def test_retries_are_bounded(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        api.failures["/api/books"] = [502] * 10
        with pytest.raises(SourceUnavailable) as info:
            await adapter.run(adapter.templates["books_by_author"], {"author": "x", "limit": 1})
        assert len(api.log) == 3
    assert info.value.status == 503
    assert info.value.message == "adapter 'books': source answered HTTP 502 (after 3 attempts)"


async def test_client_errors_are_not_retried_and_leak_nothing(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as info:
            await adapter.run(adapter.templates["book_by_isbn"], {"isbn": "000"})
        assert len(api.log) == 1
    assert info.value.status == 502
    assert info.value.message == "adapter 'books': source answered HTTP 404"


async def test_non_json_and_missing_items_are_clear_errors(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        with pytest.raises(QueryFailed, match="not JSON"):
            await adapter.execute(adapter.templates["html_page"], {})
        with pytest.raises(QueryFailed, match=r"nothing at items_path 'data\.nothing'"):
            await adapter.execute(adapter.templates["missing_items"], {})


async def test_slow_source_is_504(tmp_path):
    async with running_http_api() as api, started(tmp_path, settings_for(api, query_timeout=0.2), LIBRARY) as adapter:
        api.slow_seconds = 1.0
        with pytest.raises(SourceTimeout) as info:
            await adapter.execute(adapter.templates["book_by_isbn"], {"isbn": "1"})
    assert info.value.status == 504 and info.value.message == "adapter 'books': query timed out after 0.2 s"


async def test_source_down_is_503(tmp_path):
    settings = {
        "name": "books",
        "type": "http",
        "connection": {
            "url": f"http://127.0.0.1:{free_port()}",
            "health_path": "/api/books",
        },
        "retries": {"max_attempts": 2, "backoff_initial": 0.01},
    }
    async with started(tmp_path, settings, LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable) as info:
            await adapter.run(adapter.templates["book_by_isbn"], {"isbn": "1"})
        assert (await adapter.health()) == {"status": "down", "reason": "cannot reach the source"}
    assert info.value.message == "adapter 'books': cannot reach the source (after 2 attempts)"


@pytest.mark.parametrize(
    ("auth", "env", "header", "expected"),
    [
        ({"type": "bearer", "token_env": "IR_TEST_TOKEN"}, {"IR_TEST_TOKEN": "t0k"}, "Authorization", "Bearer t0k"),
        (
            {"type": "api_key", "header": "X-Api-Key", "key_env": "IR_TEST_KEY"},
            {"IR_TEST_KEY": "k3y"},
            "X-Api-Key",
            "k3y",
        ),
        (
            {"type": "basic", "username": "reader", "password_env": "IR_TEST_PW"},
            {"IR_TEST_PW": "pa:ss"},
            "Authorization",
            "Basic " + base64.b64encode(b"reader:pa:ss").decode(),
        ),
    ],
)
async def test_auth_from_environment(tmp_path, monkeypatch, auth, env, header, expected):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    async with running_http_api() as api:
        api.required_headers = {header: expected}
        async with started(tmp_path, settings_for(api, connection={"auth": auth}), LIBRARY) as adapter:
            result = await adapter.execute(adapter.templates["book_by_isbn"], {"isbn": BOOKS[0]["isbn"]})
        assert result.rows[0]["title"] == "Pride and Prejudice"
        api.required_headers = {header: expected + "x"}
        async with started(tmp_path, settings_for(api, connection={"auth": auth}), LIBRARY) as adapter:
            with pytest.raises(QueryFailed, match="HTTP 401"):
                await adapter.execute(adapter.templates["book_by_isbn"], {"isbn": BOOKS[0]["isbn"]})


async def test_missing_secret_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.delenv("IR_TEST_ABSENT", raising=False)
    settings = settings_for(
        type("A", (), {"url": "http://127.0.0.1:9"})(),
        connection={"auth": {"type": "bearer", "token_env": "IR_TEST_ABSENT"}},
    )
    adapter = load_adapter(tmp_path, settings, LIBRARY)
    with pytest.raises(ConfigError, match="IR_TEST_ABSENT is not set"):
        await adapter.start()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"path": "/api/{{a}}x"}, "whole segment"),
        ({"path": "/api/../admin"}, "not allowed"),
        ({"path": "api/books"}, "starting with '/'"),
        ({"path": "/api/books?x=1"}, "not allowed"),
        ({"path": "/b", "headers": {"X-User": "{{user}}"}}, "headers cannot contain placeholders"),
        ({"path": "/b", "body": {"a": 1}}, "needs method POST"),
        ({"path": "/b", "query": {"q": "name={{q}}"}}, "whole value"),
        ({"path": "/b", "query": {"q": {"nested": 1}}}, "single value"),
    ],
)
def test_template_guard(body, message):
    with pytest.raises(ValueError, match=message):
        parse_http_body(body)


hostile_text = st.one_of(
    st.sampled_from(
        [
            "../../etc/passwd",
            "'; DROP TABLE x; --",
            '{"$gt": ""}',
            "{{value}}",
            "a&b=c",
            "#frag",
            "... on Book { isbn }",
            "x" * 5000,
            "ä😀\u202e",
            "%00",
            " +%20",
        ]
    ),
    st.text(min_size=1, max_size=200).filter(lambda s: set(s) != {"."}),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=hostile_text)
async def test_hostile_values_arrive_only_as_literals(tmp_path, value):
    async with running_http_api() as api, started(tmp_path, settings_for(api), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["echo"], {"value": value})
        received = api.last()
    assert received.match == {"segment": value}
    assert received.raw_path.split("?")[0].count("/") == 3
    assert received.query == [("q", value)]
    assert received.json == {"nested": {"text": value}, "list": ["fixed", value]}
    assert result.rows == [{"segment": value, "query": [["q", value]]}]


async def test_a_values_list_is_not_cut_by_max_rows(tmp_path):
    query = {"path": "/api/books", "response": {"items_path": "data.items", "fields": ["title"]}}
    async with running_http_api() as api, started(tmp_path, settings_for(api, max_rows=2), LIBRARY) as adapter:
        listed = await adapter_values_runner(adapter)("titles.values", query, 1000)
        cut = await adapter_values_runner(adapter)("titles.values", query, 3)
    assert len(listed.rows) == 6 and not listed.truncated
    assert len(cut.rows) == 3 and cut.truncated
