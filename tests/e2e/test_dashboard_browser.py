"""The dashboard in headless Chromium: sign in with the stats key, then every chart and table must show
the numbers of a scripted set of queries (plus an hour of earlier traffic written straight to the log),
with no console errors. Saves a screenshot to test-output/dashboard.png.

Also what an operator needs of it: questions and test_routing explanations counted apart (questions by
default), unmatched questions (fuzzing garbage among them) dismissed one by one or cleared, volume-axis
labels that never repeat, and Sign out only where there is a session to end."""

from __future__ import annotations

import random
import re
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest

from server.stats import RoutingRecord
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, make_people_db, make_tree, people_tree
from server.web.routing_log import STATS_LOG

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
KPI_TOTAL_IS = "(want) => document.getElementById('kpi-total').textContent === want"  # a function: CSP forbids eval
UNMATCHED_HAS = "(q) => [...document.querySelectorAll('#unmatched-list .q')].some((e) => e.textContent === q)"
VOLUME_LABELS = "() => [...document.querySelectorAll('#volume-chart text.vol-label')].map((e) => e.textContent)"
GARBAGE = "zq#x ☃☃ ~~ 0x1f !!"
OUTPUT = Path(__file__).resolve().parents[2] / "test-output"

CONFIG = (
    BASE_CONFIG
    + """
stats: {store_queries: true, flush_interval: 0.05}
result_cache: {enabled: false}  # the broken source below must be asked, not answered from the cache
auth:
  admin_key_env: IR_DASH_ADMIN_KEY
  stats_key_env: IR_DASH_STATS_KEY
"""
)
ADAPTERS = """
adapters:
  - name: company
    type: composite
    child_adapters: [people, projects]
    confidence_threshold: 0.4
  - name: people
    type: sql
    connection: {url: "sqlite:///templates/people.db"}
    templates: ["templates/people/*.yaml"]
  - name: projects
    type: sql
    connection: {url: "sqlite:///templates/projects.db"}
    templates: ["templates/projects/*.yaml"]
"""
PROJECTS_LIBRARY = """
templates:
  - id: projects_by_status
    description: List the projects that have a given status
    nl_examples: ["Which projects are active?", "show me the finished projects", "list projects that are done"]
    parameters:
      - {name: status, type: string, required: true, allowed_values: [active, done]}
    sql: "SELECT name FROM projects WHERE status = :status ORDER BY name"
  - id: project_budget_total
    description: Total budget of all projects
    nl_examples: ["What is the total project budget?", "how much money do the projects cost in total"]
    sql: "SELECT SUM(budget) AS total FROM projects"
    result_format: summary
"""
SCRIPT = [  # (endpoint, question): asked of the default adapter, the composite "company"
    ("query", "Who works in Engineering?"),
    ("query", "show me the people in Sales"),
    ("query", "list staff of the HR department"),
    ("query", "How many people are in each department?"),
    ("query", "Which projects are active?"),
    ("query", "What is the total project budget?"),
    ("query", "find the employee called"),
    ("query", "what is the boiling point of mercury?"),
    ("query", "what is the boiling point of mercury?"),
    ("query", "recipe for banana bread"),
    ("query", "zq#x ☃☃ ~~ 0x1f !!"),  # what a fuzzer sends
    ("test_routing", "list projects that are done"),
    ("test_routing", "headcount per department"),
]
HISTORY_TEMPLATES = [
    ("people", "people_in_department"),
    ("people", "headcount_by_department"),
    ("projects", "projects_by_status"),
    ("projects", "project_budget_total"),
    ("people", "person_by_name"),
]


def build_tree(root: Path) -> Path:
    make_people_db(root / "templates" / "people.db")
    con = sqlite3.connect(root / "templates" / "projects.db")
    con.executescript(
        "CREATE TABLE projects (name TEXT, status TEXT, budget REAL);"
        "INSERT INTO projects VALUES ('Atlas', 'active', 50000), ('Beacon', 'done', 20000),"
        " ('Comet', 'active', 75000);"
    )
    con.commit()
    con.close()
    return make_tree(
        root,
        CONFIG,
        {"company.yaml": ADAPTERS},
        {"people/people.yaml": PEOPLE_LIBRARY, "projects/projects.yaml": PROJECTS_LIBRARY},
    )


def recent_tests(now: float) -> list[RoutingRecord]:
    """test_routing explanations every 20 s over the last three minutes (whole-minute volume buckets)."""
    return [
        RoutingRecord(
            ts=now - seconds,
            kind="test_routing",
            adapter="company",
            outcome="routed",
            reason="highest_combined_score_above_threshold",
            selected_adapter="people",
            template_id="people_in_department",
            combined_score=0.8,
            embedding_score=0.7,
            threshold=0.4,
            latency_ms=12.0,
        )
        for seconds in range(170, 0, -20)
    ]


def history(now: float) -> list[RoutingRecord]:
    """55 minutes of earlier traffic, fixed by a seed, so the volume chart has a shape."""
    rng = random.Random(7)
    out = []
    for minute in range(55, 1, -1):
        for _ in range(rng.randint(0, 4)):
            ts = now - minute * 60 + rng.uniform(0, 50)
            roll = rng.random()
            if roll < 0.05:  # a source failed the query: an error logged against it
                source = rng.choice(["people", "projects"])
                out.append(
                    RoutingRecord(
                        ts=ts,
                        kind="query",
                        adapter="company",
                        outcome="error",
                        reason="source_unavailable",
                        selected_adapter=source,
                        http_status=503,
                        error_code="source_unavailable",
                        latency_ms=rng.uniform(20, 40),
                    )
                )
                continue
            # now and then a child's template search timed out or failed while the others answered
            failed = [{"adapter": "projects", "kind": rng.choice(["timeout", "search"])}] if roll > 0.85 else []
            if roll < 0.18:
                out.append(
                    RoutingRecord(
                        ts=ts,
                        kind="query",
                        adapter="company",
                        outcome="no_match",
                        reason="no_matches_above_threshold",
                        combined_score=rng.uniform(0.05, 0.38),
                        embedding_score=0.2,
                        threshold=0.4,
                        question="when is the next holiday?",
                        latency_ms=rng.uniform(6, 14),
                        search_failures=failed,
                        stage_ms={
                            "embed": rng.uniform(3, 8),
                            "search": rng.uniform(0.2, 0.8),
                            "intent_model": rng.uniform(0.5, 2),
                            "routing": rng.uniform(5, 11),
                        },
                    )
                )
                continue
            source, template = rng.choice(HISTORY_TEMPLATES)
            out.append(
                RoutingRecord(
                    ts=ts,
                    kind="query",
                    adapter="company",
                    outcome="executed",
                    reason="highest_combined_score_above_threshold",
                    selected_adapter=source,
                    template_id=template,
                    combined_score=rng.uniform(0.55, 0.97),
                    embedding_score=0.7,
                    threshold=0.4,
                    row_count=rng.randint(1, 4),
                    latency_ms=rng.uniform(9, 30),
                    search_failures=failed,
                    stage_ms={
                        "embed": rng.uniform(3, 8),
                        "search": rng.uniform(0.2, 0.8),
                        "intent_model": rng.uniform(0.5, 2),
                        "string_similarity": rng.uniform(0.3, 2),
                        "routing": rng.uniform(5, 12),
                        "parameters": rng.uniform(0.05, 0.5),
                        "execute": rng.uniform(1, 6),
                    },
                )
            )
    return out


@pytest.fixture
def browser_ready():
    if not Path(CHROMIUM).exists():
        pytest.skip("no /usr/bin/chromium: run scripts/install_browser")
    return pytest.importorskip("playwright.async_api")


async def test_dashboard_shows_the_scripted_numbers(tmp_path, monkeypatch, browser_ready):
    monkeypatch.setenv("IR_DASH_ADMIN_KEY", "admin-secret")
    monkeypatch.setenv("IR_DASH_STATS_KEY", "stats-secret")
    headers = {"Authorization": "Bearer admin-secret"}
    async with running_app(build_tree(tmp_path)) as (client, _):
        rlog = client.app[STATS_LOG]
        now = time.time()
        past = history(now) + recent_tests(now)
        for record in past:
            rlog.record(record)

        # ground truth from the API's own answers
        outcomes: Counter[str] = Counter(r.outcome for r in past)
        hits: Counter[str] = Counter(f"{r.selected_adapter}/{r.template_id}" for r in past if r.template_id)
        by_source: Counter[str] = Counter(r.selected_adapter or "(unrouted)" for r in past)
        unmatched: Counter[str] = Counter(r.question for r in past if r.outcome == "no_match")
        # per source: queries run (executed or failed), failures, search failures
        queries: Counter[str] = Counter(r.selected_adapter for r in past if r.outcome in ("executed", "error"))
        failures: Counter[str] = Counter(r.selected_adapter for r in past if r.outcome == "error")
        search_failed: Counter[str] = Counter(f["adapter"] for r in past for f in r.search_failures)
        for endpoint, question in SCRIPT:
            resp = await client.post(f"/v1/{endpoint}", json={"query": question}, headers=headers)
            body = await resp.json()
            assert resp.status == 200, body
            if endpoint == "query":
                status = body["metadata"]["status"]
                routing = body["metadata"]["composite_routing"]
                source, template = routing["selected_adapter"], routing["template_id"]
            else:
                decision = body["routing_decision"]
                status = (
                    "routed"
                    if decision["would_execute"]
                    else ("ambiguous" if decision["would_route_to"] else "no_match")
                )
                source, template = decision["would_route_to"], decision["selected_template"]
            outcomes[status] += 1
            if status == "executed":
                queries[source] += 1
            by_source[source or "(unrouted)"] += 1
            if template:
                hits[f"{source}/{template}"] += 1
            if status == "no_match":
                unmatched[question] += 1
        con = sqlite3.connect(tmp_path / "templates" / "projects.db")  # the projects source breaks: one error
        con.execute("DROP TABLE projects")
        con.commit()
        con.close()
        resp = await client.post("/v1/query", json={"query": "What is the total project budget?"}, headers=headers)
        assert resp.status >= 500, await resp.text()
        outcomes["error"] += 1
        by_source["projects"] += 1
        queries["projects"] += 1
        failures["projects"] += 1
        await rlog.flush()
        total = len(past) + len(SCRIPT) + 1
        questions = sum(r.kind == "query" for r in past) + sum(e == "query" for e, _ in SCRIPT) + 1
        assert {"executed", "no_match", "needs_clarification", "routed", "error"} <= set(outcomes)

        base = str(client.make_url("/dashboard"))
        errors: list[str] = []
        async with browser_ready.async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = await browser.new_page(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            await page.goto(base)
            await page.fill("#key", "stats-secret")
            await page.click("button[type=submit]")
            # questions by default: test_routing explanations are not answers, counted apart
            await page.wait_for_function(KPI_TOTAL_IS, arg=str(questions))
            assert await page.input_value("#kind-select") == "query"
            assert await page.locator("#sign-out button").count() == 1  # a session to end
            await page.select_option("#kind-select", "all")
            await page.wait_for_function(KPI_TOTAL_IS, arg=str(total))
            assert "kind=all" in page.url
            assert len(labels := await page.evaluate(VOLUME_LABELS)) == len(set(labels)) > 1

            async def text(selector: str) -> str:
                return (await page.text_content(selector) or "").strip()

            for outcome, n in outcomes.items():
                assert await text(f"tr[data-outcome={outcome}] .count") == str(n), outcome
            assert await text("#kpi-errors-count") == f"{outcomes['error']} of {total}"
            for key, n in hits.items():
                assert await text(f'tr[data-template="{key}"] .hits') == str(n), key
            assert await page.locator("#template-rows tr").count() == len(hits)
            for source, n in by_source.items():
                legend = page.locator(f'#volume-legend span[data-series="{source}"]')
                assert await legend.get_attribute("data-total") == str(n), source
                bars = await page.eval_on_selector_all(
                    f'rect.vol-bar[data-series="{source}"]', "els => els.reduce((s, e) => s + +e.dataset.count, 0)"
                )
                assert bars == n, source
            binned = await page.eval_on_selector_all(
                "rect.hist-bin", "els => els.reduce((s, e) => s + +e.dataset.selected + +e.dataset.notSelected, 0)"
            )
            assert binned == total - outcomes["error"]  # an error has no score
            assert await page.get_attribute("#threshold-line", "data-threshold") == "0.4"
            assert await page.get_attribute(".lat-row[data-stage=latency]", "data-count") == str(total)
            executed = outcomes["executed"]
            assert await page.get_attribute(".lat-row[data-stage=execute]", "data-count") == str(executed)
            timed_by_model = sum(1 for r in past if "intent_model" in r.stage_ms)
            # the intent model's timing reaches the chart like any stage (no column or case of its own)
            assert await page.get_attribute(".lat-row[data-stage=intent_model]", "data-count") == str(timed_by_model)
            top_question, top_count = unmatched.most_common(1)[0]
            first = page.locator("#unmatched-list li").first
            assert await first.get_attribute("data-count") == str(top_count)
            assert top_question in await first.text_content()
            # the Sources panel: one row per data source, the window's figures and the live circuit
            assert await page.locator("#source-rows tr").count() == 2
            assert search_failed["projects"] > 0 and failures["people"] > 0
            for source in ("people", "projects"):
                row = f'#source-rows tr[data-source="{source}"]'
                assert await text(f"{row} .queries") == str(queries[source]), source
                assert await text(f"{row} .failures") == str(failures[source]), source
                assert await text(f"{row} .search-failures") == str(search_failed[source]), source
                assert " · " in await text(f"{row} .execute-ms"), source
                assert await page.get_attribute(row, "data-circuit") == "closed"  # a dropped table is no outage
            assert await text("#config-state") == "OK"
            assert await text("#log-dropped") == "0"

            OUTPUT.mkdir(exist_ok=True)
            shot = OUTPUT / "dashboard.png"
            await page.screenshot(path=str(shot), full_page=True)

            # the adapter selector narrows every figure to one adapter
            await page.select_option("#adapter-select", "projects")
            await page.wait_for_function("() => document.getElementById('subtitle').textContent.includes('projects')")
            assert "adapter=projects" in page.url
            await page.wait_for_function(KPI_TOTAL_IS, arg=str(by_source["projects"]))
            await page.select_option("#adapter-select", "")
            await page.wait_for_function(KPI_TOTAL_IS, arg=str(total))
            # test_routing alone: buckets of whole minutes at least (statistics come from minute rollups),
            # labelled in minutes, none repeated
            await page.select_option("#kind-select", "test_routing")
            await page.wait_for_function(KPI_TOTAL_IS, arg=str(total - questions))
            labels = await page.evaluate(VOLUME_LABELS)
            assert len(labels) > 1 and len(labels) == len(set(labels)), labels
            assert all(re.fullmatch(r"\d\d:\d\d", label) for label in labels), labels

            # unmatched: dismiss the fuzzer's question, then clear the rest; the entries still count
            await page.select_option("#kind-select", "query")
            await page.wait_for_function(UNMATCHED_HAS, arg=GARBAGE)
            no_match = await text("tr[data-outcome=no_match] .count")
            await page.locator("#unmatched-list li", has_text=GARBAGE).locator("button.dismiss").click()
            await page.wait_for_function(f"(q) => !({UNMATCHED_HAS})(q)", arg=GARBAGE)
            assert await page.locator("#unmatched-list li").count() > 0
            await page.click("#unmatched-clear")
            await page.wait_for_function("() => !document.querySelector('#unmatched-list li')")
            assert await text("#unmatched-empty") == "No unmatched questions in this window."
            assert await text("tr[data-outcome=no_match] .count") == no_match
            await browser.close()
        assert errors == []
        assert shot.stat().st_size > 20_000


async def test_a_server_without_keys_offers_no_sign_out(tmp_path, browser_ready):
    """Without keys there is no session to end: the page has no Sign out (it used to show one that led
    nowhere); with keys, a signed-in session has one (see the test above)."""
    async with running_app(people_tree(tmp_path, BASE_CONFIG)) as (client, _):
        base = str(client.make_url("/dashboard"))
        errors: list[str] = []
        async with browser_ready.async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            page = await browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            await page.goto(base)
            await page.wait_for_function(
                "() => document.getElementById('refresh-status').textContent.startsWith('updated')"
            )
            signs_out = await page.locator("#sign-out").count()
            html = await page.content()
            await browser.close()
    assert errors == [] and signs_out == 0 and "Sign out" not in html
