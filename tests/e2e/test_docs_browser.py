"""/docs in headless Chromium: the page renders every operation and schema of /openapi.json from its own
script under the dashboard's CSP, with no console errors and no request leaving the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.api.openapi import OPERATIONS
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"
RENDERED = "(n) => document.querySelectorAll('#operations .op').length === n"  # a function: CSP forbids eval


@pytest.fixture
def browser_ready():
    if not Path(CHROMIUM).exists():
        pytest.skip("no /usr/bin/chromium: run scripts/install_browser")
    return pytest.importorskip("playwright.async_api")


KEYED = BASE_CONFIG + "auth:\n  client_keys: [{name: app, key_env: IR_DOCS_KEY}]\n"


async def test_docs_page_renders_the_document(tmp_path, browser_ready, monkeypatch):
    monkeypatch.setenv("IR_DOCS_KEY", "k")
    async with running_app(people_tree(tmp_path, KEYED)) as (client, _):
        base = str(client.make_url("/docs"))
        origin = base.rsplit("/docs", 1)[0]
        doc = await (await client.get("/openapi.json")).json()
        errors: list[str] = []
        requested: list[str] = []
        async with browser_ready.async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requested.append(r.url))
            await page.goto(base)
            await page.wait_for_function(RENDERED, arg=len(OPERATIONS))
            title = await page.text_content("#title")
            query_op = await page.text_content("#op-post-v1-query")
            schema_card = await page.text_content("#schema-QueryRequest")
            toc = await page.locator("#toc a").count()
            text = await page.text_content("main")
            OUTPUT.mkdir(exist_ok=True)
            await page.screenshot(path=str(OUTPUT / "docs.png"), full_page=False)
            await browser.close()
    assert errors == []
    assert "[object" not in (text or "") and "undefined" not in (text or "")
    assert all(url.startswith(origin) for url in requested), requested  # offline: nothing from elsewhere
    assert title == "Intent Router API " + doc["info"]["version"]
    assert "/v1/query" in query_op and "Answer a question" in query_op
    assert "QueryRequest" in query_op and "ErrorResponse" in query_op and "504" in query_op
    assert "key: bearerAuth or apiKeyAuth" in query_op
    assert "query" in schema_card and "required" in schema_card and "min length 1" in schema_card
    assert toc == len(OPERATIONS) + len(doc["components"]["schemas"])
