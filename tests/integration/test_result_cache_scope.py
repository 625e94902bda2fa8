"""The result cache's key holds the adapter's settings (its scope), not only its name, the template and the
values: two configs of one adapter sharing a cache (replicas on one Redis during a rolling deploy, or one
process whose adapter is rebuilt without its entries being forgotten) never answer with each other's rows."""

from __future__ import annotations

from server.adapters.result_cache import ResultCacheSettings
from server.adapters.result_cache_factory import build_result_cache
from server.testing.adapter_harness import started
from server.testing.configs import PEOPLE_LIBRARY, make_people_db


def people(**extra: object) -> dict:
    return {"name": "people", "type": "sql", "connection": {"url": "sqlite:///templates/people.db"}, **extra}


async def test_one_adapter_under_two_settings_never_shares_answers(tmp_path):
    make_people_db(tmp_path / "templates" / "people.db")
    cache = build_result_cache(ResultCacheSettings())
    values = {"department": "Engineering"}
    async with (
        started(tmp_path, people(max_rows=1), PEOPLE_LIBRARY, cache) as capped,
        started(tmp_path, people(max_rows=10), PEOPLE_LIBRARY, cache) as roomy,
    ):
        first = await capped.run(capped.templates["people_in_department"], values)
        again = await capped.run(capped.templates["people_in_department"], values)
        other = await roomy.run(roomy.templates["people_in_department"], values)
    assert first.rows == [{"name": "Ada"}] and first.truncated
    assert again.from_cache  # the cache is on: the same settings reuse the answer
    assert not other.from_cache and other.rows == [{"name": "Ada"}, {"name": "Grace"}]
