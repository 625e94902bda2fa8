"""`GET /openapi.json` is generated from the wire models, names every public route with its error shapes
and auth, and `/docs` is served offline under the dashboard's CSP. (schemathesis drives the live server
from the same document in test_openapi_schemathesis.py.)"""

from __future__ import annotations

from jsonschema import Draft202012Validator

from server.api.openapi import REF
from server.api.requests import QueryRequest
from server.api.responses import Catalogue, LoadStatusView, QueryResponse, StatisticsResponse
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree
from server.web.dashboard_routes import SECURITY_HEADERS

PUBLIC = {
    ("post", "/v1/query"),
    ("post", "/v1/test_routing"),
    ("get", "/v1/templates"),
    ("get", "/v1/routing/statistics"),
    ("get", "/health"),
    ("post", "/admin/reload"),
    ("get", "/v1/cluster"),
    ("get", "/metrics"),
    ("get", "/dashboard"),
    ("get", "/openapi.json"),
    ("get", "/docs"),
}
INTERNAL_PREFIXES = ("/dashboard/", "/docs/assets/", "/mcp")


def _without_defs(schema: dict) -> dict:
    return {k: v for k, v in schema.items() if k != "$defs"}


async def test_document_is_generated_from_the_models_and_covers_every_route(tmp_path):
    async with running_app(people_tree(tmp_path, BASE_CONFIG)) as (client, _):
        resp = await client.get("/openapi.json")
        assert resp.status == 200 and resp.content_type == "application/json"
        doc = await resp.json()
        routes = {
            (r.method.lower(), r.resource.canonical)
            for r in client.app.router.routes()
            if r.method != "HEAD" and r.resource is not None
        }
    assert doc["openapi"] == "3.1.0"
    documented = {(m, p) for p, item in doc["paths"].items() for m in item}
    assert documented == PUBLIC
    assert {(m, p) for m, p in routes if not p.startswith(INTERNAL_PREFIXES)} == PUBLIC  # nothing left out

    schemas = doc["components"]["schemas"]
    for model in (QueryResponse, StatisticsResponse, LoadStatusView, Catalogue):  # the handlers' own models
        assert schemas[model.__name__] == _without_defs(model.model_json_schema(ref_template=REF, mode="serialization"))
    assert schemas["QueryRequest"] == _without_defs(QueryRequest.model_json_schema(ref_template=REF))
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)  # OpenAPI 3.1 schemas are JSON Schema 2020-12
    refs = {v for v in _walk(doc) if isinstance(v, str) and v.startswith("#/components/schemas/")}
    assert refs and {r.rsplit("/", 1)[1] for r in refs} <= set(schemas)  # every $ref resolves

    query = doc["paths"]["/v1/query"]["post"]
    assert query["requestBody"]["content"]["application/json"]["schema"] == {"$ref": REF.format(model="QueryRequest")}
    error = {"$ref": REF.format(model="ErrorResponse")}
    for status in ("400", "401", "403", "404", "408", "413", "502", "503", "504"):
        assert query["responses"][status]["content"]["application/json"]["schema"] == error
    assert query["security"] == [{"bearerAuth": []}, {"apiKeyAuth": []}]
    assert doc["components"]["securitySchemes"]["apiKeyAuth"] == {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert doc["paths"]["/health"]["get"]["security"] == [{}, {"bearerAuth": []}, {"apiKeyAuth": []}]  # key optional
    reload = doc["paths"]["/admin/reload"]["post"]["responses"]
    assert reload["422"]["content"]["application/json"]["schema"] == {"$ref": REF.format(model="LoadStatusView")}
    assert set(doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == {"text/plain"}
    assert set(doc["paths"]["/dashboard"]["get"]["responses"]["200"]["content"]) == {"text/html"}
    kind = next(p for p in doc["paths"]["/v1/routing/statistics"]["get"]["parameters"] if p["name"] == "kind")
    assert kind["schema"] == {"enum": ["query", "test_routing", "all"], "type": "string"} and not kind["required"]


def _walk(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)
    else:
        yield node


async def test_docs_page_is_self_contained_under_the_dashboard_csp(tmp_path):
    async with running_app(people_tree(tmp_path, BASE_CONFIG)) as (client, _):
        page = await client.get("/docs")
        html = await page.text()
        script = await client.get("/docs/assets/docs.js")
        js = await script.text()
        style = await client.get("/docs/assets/docs.css")
        missing = await client.get("/docs/assets/index.html")
    assert page.status == 200 and page.content_type == "text/html"
    assert page.headers["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]
    assert "/docs/assets/docs.js" in html and "http://" not in html and "https://" not in html  # no CDN
    assert script.status == 200 and script.content_type == "text/javascript" and 'fetch("/openapi.json"' in js
    assert "http://" not in js and "https://" not in js
    assert style.status == 200 and style.content_type == "text/css"
    assert missing.status == 404


async def test_statistics_and_reload_answer_with_their_models(tmp_path):
    async with running_app(people_tree(tmp_path, BASE_CONFIG)) as (client, _):
        stats = await client.get("/v1/routing/statistics?kind=query&unknown=1")
        body = await stats.json()
        bad = await client.get("/v1/routing/statistics?kind=everything")
        bad_body = await bad.json()
        reload = await client.post("/admin/reload")
        reloaded = await reload.json()
        templates = await client.get("/v1/templates?adapter=")
    assert stats.status == 200
    StatisticsResponse.model_validate(body)
    assert body["adapter"] == "people" and body["type"] == "sql" and body["total_templates"] == 3
    assert bad.status == 400 and bad_body["error"]["code"] == "bad_request"
    assert bad_body["error"]["message"].startswith("kind: ")
    assert reload.status == 200 and LoadStatusView.model_validate(reloaded).ok
    assert templates.status == 200  # an empty parameter counts as absent
