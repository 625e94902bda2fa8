"""Statistics `since` values that are not a usable moment are a 400 naming `since`, never a 503."""

from __future__ import annotations

from urllib.parse import quote

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree

STATS = BASE_CONFIG + "stats: {flush_interval: 0.05}\n"
BAD = ["1e308", "inf", "-inf", "nan", "Infinity", "-1", "12345678901234567890", "9" * 400 + "d", "0001-01-01", "1_000"]


async def test_out_of_range_and_non_finite_since_values_are_400(tmp_path):
    async with running_app(people_tree(tmp_path, STATS)) as (client, _):
        for value in BAD:
            resp = await client.get("/v1/routing/statistics?since=" + quote(value))
            body = await resp.json()
            assert resp.status == 400, (value, body)
            assert body["error"]["code"] and body["error"]["message"].startswith("since:"), value
        for value in ("15m", "0", "1732000000", "2999-01-01T00:00:00Z", "9999-12-31"):
            resp = await client.get("/v1/routing/statistics?since=" + quote(value))
            assert resp.status == 200, (value, await resp.text())


async def test_an_adapter_filter_that_is_no_adapter_name_is_400_without_repeating_it(tmp_path):
    async with running_app(people_tree(tmp_path, STATS)) as (client, _):
        for value in ("../x", "\x00", "A" * 8000):  # (an empty value is no filter, as for every parameter)
            resp = await client.get("/v1/routing/statistics?adapter=" + quote(value))
            body = await resp.json()
            assert resp.status == 400, (value[:20], body)
            assert body["error"]["message"].startswith("adapter:") and (len(value) < 3 or value not in str(body))
        assert (await client.get("/v1/routing/statistics?adapter=people")).status == 200
