"""`GET /openapi.json` is generated from the wire models, names every public route with its error shapes
and auth, and `/docs` is served offline under the dashboard's CSP. (schemathesis drives the live server
from the same document in test_openapi_schemathesis.py.)"""

from __future__ import annotations

import re
from urllib.parse import quote

from jsonschema import Draft202012Validator

from server.api.openapi import REF, build_openapi
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
    ("post", "/v1/routing/unmatched/forget"),
    ("get", "/health"),
    ("post", "/admin/reload"),
    ("get", "/v1/cluster"),
    ("get", "/metrics"),
    ("get", "/dashboard"),
    ("get", "/dashboard/login"),
    ("post", "/dashboard/login"),
    ("post", "/dashboard/logout"),
    ("get", "/mcp"),
    ("post", "/mcp"),
    ("delete", "/mcp"),
    ("get", "/openapi.json"),
    ("get", "/docs"),
}
INTERNAL_PREFIXES = ("/dashboard/assets/", "/docs/assets/")  # static files of the two pages
KEYED = BASE_CONFIG + "auth:\n  client_keys: [{name: app, key_env: IR_OPENAPI_KEY}]\n"


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
    for status in ("400", "404", "408", "409", "413", "502", "503", "504"):
        assert query["responses"][status]["content"]["application/json"]["schema"] == error
    reload = doc["paths"]["/admin/reload"]["post"]["responses"]
    assert reload["422"]["content"]["application/json"]["schema"] == {"$ref": REF.format(model="LoadStatusView")}
    assert set(doc["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == {"text/plain"}
    assert set(doc["paths"]["/dashboard"]["get"]["responses"]["200"]["content"]) == {"text/html"}
    kind = next(p for p in doc["paths"]["/v1/routing/statistics"]["get"]["parameters"] if p["name"] == "kind")
    assert kind["schema"]["anyOf"][0] == {"enum": ["query", "test_routing", "all"], "type": "string"}
    assert not kind["required"]
    mcp = doc["paths"]["/mcp"]["post"]
    assert mcp["requestBody"]["content"]["application/json"]["schema"] == {"$ref": REF.format(model="JsonRpcMessage")}
    assert set(mcp["responses"]["200"]["content"]) == {"text/event-stream", "application/json"}
    login = doc["paths"]["/dashboard/login"]["post"]  # no keys: nothing to post, every post is sent on
    assert "requestBody" not in login and set(login["responses"]["303"]["content"]) == {"text/html"}
    assert login["responses"]["303"]["headers"]["Location"]


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


async def test_a_server_without_keys_documents_no_keys_and_one_with_keys_does(tmp_path, monkeypatch):
    """Security schemes, per-operation security and the statuses only keys cause (401/403, the dashboard's
    redirect to its login) appear exactly when the server has keys."""
    async with running_app(people_tree(tmp_path / "open", BASE_CONFIG)) as (client, _):
        open_doc = await (await client.get("/openapi.json")).json()
    monkeypatch.setenv("IR_OPENAPI_KEY", "k")
    async with running_app(people_tree(tmp_path / "keyed", KEYED)) as (client, _):
        keyed_doc = await (await client.get("/openapi.json")).json()

    assert "securitySchemes" not in open_doc["components"]
    assert all("security" not in op for item in open_doc["paths"].values() for op in item.values())
    assert not {"401", "403"} & set(open_doc["paths"]["/v1/query"]["post"]["responses"])
    assert set(open_doc["paths"]["/dashboard"]["get"]["responses"]) == {"200"}
    assert "asks for none" in open_doc["info"]["description"]

    assert keyed_doc["components"]["securitySchemes"]["apiKeyAuth"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    query = keyed_doc["paths"]["/v1/query"]["post"]
    assert query["security"] == [{"bearerAuth": []}, {"apiKeyAuth": []}] and {"401", "403"} <= set(query["responses"])
    health = keyed_doc["paths"]["/health"]["get"]
    assert health["security"] == [{}, {"bearerAuth": []}, {"apiKeyAuth": []}]  # key optional
    login = keyed_doc["paths"]["/dashboard/login"]["post"]
    assert set(login["requestBody"]["content"]) == {"application/x-www-form-urlencoded"}
    assert "Set-Cookie" in login["responses"]["303"]["headers"] and "401" in login["responses"]
    dashboard = keyed_doc["paths"]["/dashboard"]["get"]["responses"]
    assert set(dashboard["303"]["content"]) == {"text/html"} and "Location" in dashboard["303"]["headers"]


async def test_extraction_clarification_and_reason_are_typed(tmp_path):
    """Generated clients get named fields and enums, not "array of any" and free strings."""
    async with running_app(people_tree(tmp_path, BASE_CONFIG)) as (client, _):
        schemas = (await (await client.get("/openapi.json")).json())["components"]["schemas"]
    meta = schemas["QueryMetadata"]["properties"]

    def items(prop: dict) -> dict:
        return next(b for b in prop["anyOf"] if b.get("type") == "array")["items"]

    assert items(meta["extraction"]) == {"$ref": REF.format(model="ExtractedValueView")}
    assert items(meta["extraction_left_out"]) == {"$ref": REF.format(model="LeftOutView")}
    assert items(meta["clarification"]) == {"$ref": REF.format(model="ClarificationView")}
    assert items(schemas["SourceSection"]["properties"]["clarification"]) == {
        "$ref": REF.format(model="ClarificationView")
    }
    assert set(schemas["ExtractedValueView"]["required"]) == {"name", "value", "extractor", "span"}
    assert set(schemas["ExtractedValueView"]["properties"]) == {
        "name",
        "value",
        "extractor",
        "span",
        "text",
        "score",
        "learned",
    }
    assert set(schemas["LeftOutView"]["properties"]) == {"name", "text", "reason", "span", "score"}
    assert {"name", "problem", "message", "allowed_values", "suggestions"} <= set(
        schemas["ClarificationView"]["properties"]
    )
    decision = {"$ref": REF.format(model="DecisionReason")}
    assert meta["reason"]["anyOf"] == [decision, {"$ref": REF.format(model="AnswerReason")}]
    assert schemas["CompositeRouting"]["properties"]["reason"] == decision
    assert schemas["RoutingDecisionView"]["properties"]["reason"] == decision
    assert "no_matches_above_threshold" in schemas["DecisionReason"]["enum"]
    assert "fan_out" in schemas["AnswerReason"]["enum"]


async def test_query_parameters_say_what_the_server_reads(tmp_path):
    """An empty value is documented as absent (it is answered as absent); `since` is a pattern of exactly
    the forms the window reads, so every value it admits is a usable moment and every other one a 400."""
    async with running_app(people_tree(tmp_path, BASE_CONFIG + "stats: {flush_interval: 0.05}\n")) as (client, _):
        doc = await (await client.get("/openapi.json")).json()
        params = {p["name"]: p for p in doc["paths"]["/v1/routing/statistics"]["get"]["parameters"]}
        since = params["since"]["schema"]["anyOf"][0]
        assert params["adapter"]["schema"]["anyOf"][1] == {"type": "string", "maxLength": 0}
        pattern = re.compile(since["pattern"])
        good = [
            "15m",
            "0.5h",
            "999999999w",
            "0",
            "1732000000",
            "2024-02-29",
            "2027-01-15T08:00:00Z",
            "1970-01-01T00:00+05:00",
        ]
        bad = ["15M", "yesterday", "2023-02-29", "2024-04-31", "1969-12-31", "٠", "1e5", "123456789012"]
        for value in good:
            assert pattern.fullmatch(value), value
            resp = await client.get("/v1/routing/statistics?since=" + quote(value))
            assert resp.status == 200, (value, await resp.text())
        for value in bad:
            assert not pattern.fullmatch(value), value
            resp = await client.get("/v1/routing/statistics?since=" + quote(value))
            body = await resp.json()
            assert resp.status == 400 and body["error"]["message"].startswith("since: "), value
        for empty in ("adapter=", "kind=", "since="):
            assert (await client.get("/v1/routing/statistics?" + empty)).status == 200
        reload = await client.post("/admin/reload?allow_removal=yes")
        assert reload.status == 400 and (await reload.json())["error"]["message"] == "allow_removal: use true or false"
        assert (await client.post("/admin/reload?allow_removal=")).status == 200


async def test_fan_out_on_a_single_source_is_a_documented_409(tmp_path):
    async with running_app(people_tree(tmp_path, BASE_CONFIG)) as (client, _):
        doc = await (await client.get("/openapi.json")).json()
        for path in ("/v1/query", "/v1/test_routing"):
            resp = await client.post(path, json={"query": "who works in Sales?", "execution": "fan_out"})
            body = await resp.json()
            assert resp.status == 409 and body["error"]["code"] == "not_a_composite", path
            assert "409" in doc["paths"][path]["post"]["responses"]


async def test_the_dashboard_redirects_with_an_html_page(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_OPENAPI_KEY", "k")
    async with running_app(people_tree(tmp_path, KEYED)) as (client, _):
        resp = await client.get("/dashboard", allow_redirects=False)
        text = await resp.text()
        logout = await client.post("/dashboard/logout", allow_redirects=False)
    assert resp.status == 303 and resp.headers["Location"] == "/dashboard/login"
    assert resp.content_type == "text/html" and '<a href="/dashboard/login">' in text
    assert logout.status == 303 and logout.content_type == "text/html"


def test_the_contract_describes_the_api_not_the_source_layout():
    """Model docstrings are the document's descriptions: they name fields and behaviour, never source files."""
    text = str(build_openapi())
    assert not re.findall(r"[\w/]+\.py\b", text)
