"""A 400 names the field it is about without sending a client's long or hostile input back: an unknown field
of 60,000 characters, or one holding control and bidi characters, is shown short and printable
(api/validation.py), on the JSON API and its query strings alike; and no response names the Python and aiohttp
versions behind it."""

from __future__ import annotations

from server.api.validation import SHOWN_CHARS, shown
from server.testing.app import running_app
from server.testing.configs import people_tree


def test_a_name_is_shown_short_and_printable():
    assert shown("colour") == "colour"
    assert shown("\x00\u202eabc") == "??abc"
    assert shown("Z" * 1000) == "Z" * SHOWN_CHARS + "..."


async def test_an_unknown_field_is_named_without_echoing_it_whole(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        hostile = "<script>" + "Z" * 60000
        resp = await client.post("/v1/query", json={"query": "who works in Sales?", hostile: 1})
        body = await resp.json()
        assert resp.status == 400 and body["error"]["code"] == "bad_request"
        assert body["error"]["message"].endswith(": unknown field") and len(body["error"]["message"]) < 120
        resp = await client.post("/v1/routing/unmatched/forget", json={"questions": ["a"], "\x00\u202eQ" * 100: 1})
        message = (await resp.json())["error"]["message"]
        assert resp.status == 400 and "\x00" not in message and "\u202e" not in message and len(message) < 120


async def test_responses_do_not_name_the_python_and_aiohttp_versions(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        for resp in (
            await client.get("/health"),
            await client.post("/v1/query", json={"query": "who works in Sales?"}, headers={"Host": "evil.example"}),
            await client.get("/no/such/path"),
        ):
            assert resp.headers["Server"] == "intent-router", resp.status


async def test_a_json_body_with_a_byte_order_mark_is_read(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        body = "\ufeff" + '{"query": "who works in Sales?", "adapter": "people"}'
        resp = await client.post("/v1/query", data=body.encode(), headers={"Content-Type": "application/json"})
        assert resp.status == 200 and (await resp.json())["status"] == "executed"
