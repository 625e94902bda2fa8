"""GET /v1/templates on the demo: every template with its parameters as JSON Schema, limited to the
adapters the caller's key may query (a composite's key sees the composite's children)."""

from __future__ import annotations

import jsonschema
import pytest

from server.testing.app import running_app
from server.testing.demo import warm_demo_tree, with_demo_keys

ADMIN = {"X-API-Key": "admin-k"}
COMPANY = {"X-API-Key": "company-k"}
HR = {"Authorization": "Bearer hr-k"}


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("IR_DEMO_ADMIN_KEY", "admin-k")
    monkeypatch.setenv("IR_DEMO_COMPANY_KEY", "company-k")
    monkeypatch.setenv("IR_DEMO_HR_KEY", "hr-k")


async def test_catalogue_scoped_by_key(tmp_path, keys):
    config = with_demo_keys(warm_demo_tree(tmp_path))
    async with running_app(config) as (client, holder):
        resp = await client.get("/v1/templates")
        assert resp.status == 401
        assert (await resp.json())["error"]["code"] == "unauthorized"

        body = await (await client.get("/v1/templates", headers=ADMIN)).json()
        names = [a["name"] for a in body["adapters"]]
        assert names == ["hr", "sales", "company"]
        runtime = holder.current
        adapters = runtime.adapters
        assert body["template_count"] == len(adapters["hr"].templates) + len(adapters["sales"].templates)
        company = body["adapters"][2]
        assert company["type"] == "composite" and company["routes_to"] == ["hr", "sales"]
        assert company["templates"] == []

        hr = {t["id"]: t for t in body["adapters"][0]["templates"]}
        summary = hr["department_salary_summary"]
        assert summary["examples"][0] == "What's the average salary in Engineering?"
        dept = summary["parameters"]["properties"]["department"]
        assert dept["type"] == "string" and "Engineering" in dept["enum"]
        assert summary["parameters"]["required"] == ["department"]
        above = hr["employees_earning_above"]["parameters"]
        assert above["properties"]["limit"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 500,
            "default": 100,
            "description": "Maximum number of employees to list",
        }
        for adapter in body["adapters"]:
            for template in adapter["templates"]:
                jsonschema.Draft202012Validator.check_schema(template["parameters"])

        # a key limited to the composite sees the composite and what it routes to
        body = await (await client.get("/v1/templates", headers=COMPANY)).json()
        assert [a["name"] for a in body["adapters"]] == ["hr", "sales", "company"]
        # a key limited to hr sees hr only, and may not ask for sales' templates
        body = await (await client.get("/v1/templates", headers=HR)).json()
        assert [a["name"] for a in body["adapters"]] == ["hr"]
        resp = await client.get("/v1/templates?adapter=sales", headers=HR)
        assert resp.status == 403 and (await resp.json())["error"]["code"] == "forbidden"
        resp = await client.get("/v1/templates?adapter=company", headers=HR)
        assert resp.status == 403

        body = await (await client.get("/v1/templates?adapter=sales", headers=COMPANY)).json()
        assert [a["name"] for a in body["adapters"]] == ["sales"]
        body = await (await client.get("/v1/templates?adapter=company", headers=ADMIN)).json()
        assert [a["name"] for a in body["adapters"]] == ["hr", "sales", "company"]
        resp = await client.get("/v1/templates?adapter=nope", headers=ADMIN)
        assert resp.status == 404 and (await resp.json())["error"]["code"] == "not_found"
