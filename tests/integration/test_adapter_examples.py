"""The shipped example adapters (config/adapters/examples.yaml) and their template libraries run against
the loopback servers seeded with the shipped example data: every example template returns rows."""

from __future__ import annotations

from typing import Any

import pytest

from server.testing.es_standin import running_es_standin
from server.testing.examples import PARAMS, example_adapter, example_settings
from server.testing.graphql_api import running_graphql_api
from server.testing.http_api import running_http_api


def test_examples_are_disabled_and_cover_every_server_type():
    settings = example_settings()
    assert all(a["enabled"] is False for a in settings.values())
    assert {a["type"] for a in settings.values()} == {"sql", "mongodb", "elasticsearch", "http", "graphql"}
    assert set(settings) == set(PARAMS)


async def run_example(name: str, connection: dict[str, Any]) -> dict[str, int]:
    adapter, templates = example_adapter(name, connection)
    assert {t.id for t in templates} == set(PARAMS[name])
    await adapter.start()
    try:
        counts = {}
        for template in templates:
            result = await adapter.execute(template, PARAMS[name][template.id])
            counts[template.id] = len(result.rows)
        return counts
    finally:
        await adapter.close()


@pytest.mark.parametrize("name", ["inventory_pg", "inventory_mariadb", "cars", "support_tickets", "books", "flights"])
async def test_every_example_template_returns_rows(name, request):
    if name == "inventory_pg":
        counts = await run_example(name, {"url": request.getfixturevalue("pg_database").url})
    elif name == "inventory_mariadb":
        counts = await run_example(name, {"url": request.getfixturevalue("mariadb_database").url})
    elif name == "cars":
        server = request.getfixturevalue("mongo_server")
        counts = await run_example(name, {"url": server.url, "database": server.database})
    elif name == "support_tickets":
        async with running_es_standin() as es:
            counts = await run_example(name, {"url": es.url, "api_key_env": None})
    elif name == "books":
        async with running_http_api() as api:
            counts = await run_example(name, {"url": api.url, "auth": None})
    else:
        async with running_graphql_api() as api:
            counts = await run_example(name, {"url": api.url})
    assert all(n > 0 for n in counts.values()), counts
