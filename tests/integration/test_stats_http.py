"""The routing log behind the real HTTP app: what /v1/query and /v1/test_routing record, errors
included, the statistics endpoint's figures, and auth on statistics and the dashboard."""

from __future__ import annotations

import json

import pytest

from server.config.errors import ConfigError
from server.runtime.loader import load_config
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_people_db, make_tree, people_tree
from server.web.dashboard_auth import COOKIE
from server.web.routing_log import STATS_LOG

STATS = BASE_CONFIG + "stats: {store_queries: true, flush_interval: 0.05}\n"
QUESTIONS = [
    ("who works in the Engineering department?", "executed"),
    ("list staff of the HR department", "executed"),
    ("headcount per department", "executed"),
    ("what is the boiling point of mercury?", "no_match"),
    ("what is the boiling point of mercury?", "no_match"),
    ("recipe for banana bread", "no_match"),
    ("find the employee called", "needs_clarification"),
]


async def ask(client, questions, path="/v1/query", headers=None):
    for question, expected in questions:
        resp = await client.post(path, json={"query": question}, headers=headers or {})
        body = await resp.json()
        assert resp.status == 200, body
        if path == "/v1/query":
            assert body["metadata"]["status"] == expected, question


async def stats(client, query="", headers=None) -> dict:
    await client.app[STATS_LOG].flush()
    resp = await client.get("/v1/routing/statistics" + query, headers=headers or {})
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_queries_are_logged_and_counted(tmp_path):
    async with running_app(people_tree(tmp_path, STATS)) as (client, _):
        await ask(client, QUESTIONS)
        await ask(client, [("show me the people in Sales", None)], path="/v1/test_routing")
        body = await stats(client, "?since=1h")
    assert body["type"] == "sql" and body["total_templates"] == 3  # the design's shape is still there
    log = body["routing_log"]
    assert log["total"] == 8
    assert log["by_kind"] == {"query": 7, "test_routing": 1}
    counts = {k: v["count"] for k, v in log["outcomes"].items()}
    assert counts == {"executed": 3, "no_match": 3, "needs_clarification": 1, "error": 0, "routed": 1}
    hits = {t["template_id"]: t["hits"] for t in log["templates"]}
    assert hits == {"people_in_department": 3, "headcount_by_department": 1, "person_by_name": 1}
    assert log["unmatched_questions"][0] == {
        **log["unmatched_questions"][0],
        "question": "what is the boiling point of mercury?",
        "count": 2,
    }
    assert [u["question"] for u in log["unmatched_questions"]][1] == "recipe for banana bread"
    assert {"embed", "search", "decision", "routing", "parameters", "execute", "latency"} <= set(log["latency_ms"])
    assert log["latency_ms"]["execute"]["count"] == 3 and log["latency_ms"]["latency"]["count"] == 8
    assert log["latency_ms"]["latency"]["p50"] > 0
    assert log["score_histogram"]["threshold"] == 0.3
    assert sum(log["score_histogram"]["selected"]) == 5 and sum(log["score_histogram"]["not_selected"]) == 3
    assert log["log"]["written"] == 8 and log["log"]["dropped"] == 0
    assert body["config_status"]["last_load"]["ok"] is True


async def test_row_count_and_scores_are_recorded(tmp_path):
    async with running_app(people_tree(tmp_path, STATS)) as (client, _):
        resp = await client.post("/v1/query", json={"query": "who works in the Engineering department?"})
        answer = await resp.json()
        rlog = client.app[STATS_LOG]
        await rlog.flush()
        with rlog.engine.connect() as conn:
            row = conn.execute(rlog.table.select()).one()._mapping
    assert row["row_count"] == len(answer["rows"]) == 2
    assert row["outcome"] == "executed" and row["template_id"] == "people_in_department"
    assert row["combined_score"] == pytest.approx(answer["confidence"], abs=1e-4)
    assert row["question"] == "who works in the Engineering department?"
    assert json.loads(row["parameters"]) == answer["metadata"]["parameters"] == {"department": "Engineering"}
    stage_ms = json.loads(row["stage_ms"])
    assert stage_ms["execute"] > 0 and row["latency_ms"] >= stage_ms["routing"]
    assert json.loads(row["stage_scores"])["embedding"] == pytest.approx(row["embedding_score"])


async def test_an_older_log_table_gains_the_new_columns(tmp_path):
    """A log written by a version with fixed per-stage columns keeps working: the new columns are added."""
    import sqlalchemy as sa

    tree = people_tree(tmp_path, STATS)
    db = tmp_path / "data" / "routing_log.sqlite3"
    db.parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE TABLE routing_log (id INTEGER PRIMARY KEY, ts_ms BIGINT NOT NULL, kind VARCHAR(16) NOT NULL, "
                "adapter VARCHAR(200) NOT NULL, outcome VARCHAR(24) NOT NULL, reason VARCHAR(64), "
                "selected_adapter VARCHAR(200), template_id VARCHAR(200), combined_score FLOAT, embedding_score FLOAT, "
                "rerank_score FLOAT, threshold FLOAT, candidates INTEGER NOT NULL, row_count INTEGER, "
                "http_status INTEGER NOT NULL, error_code VARCHAR(64), question TEXT, latency_ms FLOAT, embed_ms FLOAT)"
            )
        )
    engine.dispose()
    async with running_app(tree) as (client, _):
        resp = await client.post("/v1/query", json={"query": "who works in the Engineering department?"})
        assert resp.status == 200
        rlog = client.app[STATS_LOG]
        await rlog.flush()
        assert rlog.status()["written"] == 1
        with rlog.engine.connect() as conn:
            row = conn.execute(rlog.table.select()).one()._mapping
    assert json.loads(row["stage_ms"])["embed"] > 0
    assert row["session_turn"] == 1 and len(row["session_hash"]) == 32 and row["follow_up"] is None
    assert json.loads(row["parameters"]) == {"department": "Engineering"}


async def test_the_values_are_kept_like_the_question(tmp_path):
    """A test_routing decision logs the values its template would run with; with store_queries off (the
    default) neither the question nor the values it named are written."""
    async with running_app(people_tree(tmp_path, STATS)) as (client, _):
        await ask(client, [("show me the people in Sales", None)], path="/v1/test_routing")
        await ask(client, [("find the employee called", "needs_clarification")])
        rlog = client.app[STATS_LOG]
        await rlog.flush()
        with rlog.engine.connect() as conn:
            routed, clarified = conn.execute(rlog.table.select().order_by(rlog.table.c.id)).all()
    assert json.loads(routed._mapping["parameters"]) == {"department": "Sales"}
    assert clarified._mapping["parameters"] is None  # nothing found before the clarification
    async with running_app(people_tree(tmp_path / "private", BASE_CONFIG + "stats: {flush_interval: 0.05}\n")) as (
        client,
        _,
    ):
        await ask(client, [("who works in the Engineering department?", "executed")])
        rlog = client.app[STATS_LOG]
        await rlog.flush()
        with rlog.engine.connect() as conn:
            row = conn.execute(rlog.table.select()).one()._mapping
    assert row["question"] is None and row["parameters"] is None and row["template_id"] == "people_in_department"


async def test_errors_are_logged_with_outcome_error(tmp_path):
    tree = people_tree(tmp_path, STATS)
    async with running_app(tree) as (client, _):
        (tmp_path / "templates" / "people.db").unlink()  # the source loses its table: query fails (5xx)
        resp = await client.post("/v1/query", json={"query": "headcount per department"})
        assert resp.status >= 500
        code = (await resp.json())["error"]["code"]
        resp = await client.post("/v1/query", json={"query": ""})  # a 400 is not a routing decision
        assert resp.status == 400
        log = (await stats(client))["routing_log"]
    assert log["total"] == 1
    assert log["outcomes"]["error"] == {"count": 1, "rate": 1.0}
    assert log["errors"] == [{"code": code, "count": 1}]


async def test_request_timeout_is_logged_as_error(tmp_path):
    config = STATS + "server: {request_timeout: 0.000001}\n"
    async with running_app(people_tree(tmp_path, config)) as (client, _):
        resp = await client.post("/v1/query", json={"query": "headcount per department"})
        assert resp.status == 504
        log = (await stats(client))["routing_log"]
    assert log["errors"] == [{"code": "timeout", "count": 1}]


async def test_question_text_is_not_stored_by_default(tmp_path):
    async with running_app(people_tree(tmp_path)) as (client, _):
        await ask(client, QUESTIONS[3:5])
        log = (await stats(client))["routing_log"]
    assert log["outcomes"]["no_match"]["count"] == 2
    assert log["unmatched_questions"] == [] and log["store_queries"] is False


async def test_adapter_and_window_filters(tmp_path):
    second = PEOPLE_ADAPTER.replace("name: people", "name: staff")
    make_people_db(tmp_path / "templates" / "people.db")
    tree = make_tree(
        tmp_path, STATS, {"a.yaml": PEOPLE_ADAPTER, "b.yaml": second}, {"people/people.yaml": PEOPLE_LIBRARY}
    )
    async with running_app(tree) as (client, _):
        for adapter, n in (("people", 2), ("staff", 3)):
            for _ in range(n):
                await client.post("/v1/query", json={"query": "headcount per department", "adapter": adapter})
        staff = await stats(client, "?adapter=staff&since=15m")
        assert staff["adapter"] == "staff" and staff["routing_log"]["total"] == 3
        everything = await stats(client, "?since=15m")
        assert everything["routing_log"]["total"] == 5
        assert {s: sum(v) for s, v in everything["routing_log"]["volume"]["series"].items()} == {
            "staff": 3,
            "people": 2,
        }
        future = await stats(client, "?since=2999-01-01T00:00:00Z")
        assert future["routing_log"]["total"] == 0
        resp = await client.get("/v1/routing/statistics?since=last-tuesday")
        assert resp.status == 400 and "since" in (await resp.json())["error"]["message"]
        resp = await client.get("/v1/routing/statistics?adapter=nope")
        assert resp.status == 404


async def test_logging_can_be_switched_off(tmp_path):
    async with running_app(people_tree(tmp_path, BASE_CONFIG + "stats: {enabled: false}\n")) as (client, _):
        await ask(client, QUESTIONS[:1])
        assert STATS_LOG not in client.app
        resp = await client.get("/v1/routing/statistics")
        body = await resp.json()
    assert body["routing_log"] == {"enabled": False} and body["total_templates"] == 3
    assert not (tmp_path / "data" / "routing_log.sqlite3").exists()


def test_unknown_stats_key_is_a_config_error(tmp_path):
    tree = people_tree(tmp_path, BASE_CONFIG + "stats:\n  store_query: true\n")
    with pytest.raises(ConfigError) as err:
        load_config(tree)
    assert "store_query" in str(err.value) and "config.yaml:" in str(err.value)


AUTH = (
    STATS
    + """
auth:
  client_keys: [{name: chat, key_env: IR_STATS_CHAT_KEY}]
  admin_key_env: IR_STATS_ADMIN_KEY
  stats_key_env: IR_STATS_STATS_KEY
"""
)


async def test_statistics_and_dashboard_respect_auth(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_STATS_CHAT_KEY", "chat-key")
    monkeypatch.setenv("IR_STATS_ADMIN_KEY", "admin-key")
    monkeypatch.setenv("IR_STATS_STATS_KEY", "stats-key")
    async with running_app(people_tree(tmp_path, AUTH)) as (client, _):
        assert (await client.get("/v1/routing/statistics")).status == 401
        assert (await client.get("/v1/routing/statistics", headers={"X-API-Key": "chat-key"})).status == 403
        for key in ("stats-key", "admin-key"):
            resp = await client.get("/v1/routing/statistics", headers={"Authorization": f"Bearer {key}"})
            assert resp.status == 200
        # the stats key may read, not query
        resp = await client.post("/v1/query", json={"query": "x"}, headers={"X-API-Key": "stats-key"})
        assert resp.status == 403

        page = await client.get("/dashboard", allow_redirects=False)
        assert page.status == 303 and page.headers["Location"] == "/dashboard/login"
        page = await client.get("/dashboard")
        assert page.status == 200 and "Sign in" in await page.text() and "Routing volume" not in await page.text()
        assert (await client.get("/dashboard/assets/dashboard.js")).status == 200  # assets hold no data
        assert (await client.get("/dashboard/assets/..%2Fdashboard_routes.py")).status == 404
        resp = await client.post("/dashboard/login", data={"key": "chat-key"}, allow_redirects=False)
        assert resp.status == 401 and "not an admin or statistics key" in await resp.text()
        assert COOKIE not in client.session.cookie_jar.filter_cookies(client.make_url("/"))

        resp = await client.post("/dashboard/login", data={"key": "stats-key"}, allow_redirects=False)
        assert resp.status == 303 and resp.headers["Location"] == "/dashboard"
        assert "HttpOnly" in resp.headers["Set-Cookie"] and "SameSite=Strict" in resp.headers["Set-Cookie"]
        page = await client.get("/dashboard")
        assert page.status == 200 and "Routing dashboard" in await page.text()
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        assert (await client.get("/v1/routing/statistics")).status == 200  # the session cookie suffices
        assert (await client.post("/admin/reload")).status == 401  # but only for statistics

        await client.post("/dashboard/logout", allow_redirects=False)
        assert (await client.get("/v1/routing/statistics")).status == 401


async def test_a_forged_session_cookie_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_STATS_CHAT_KEY", "chat-key")
    monkeypatch.setenv("IR_STATS_ADMIN_KEY", "admin-key")
    monkeypatch.setenv("IR_STATS_STATS_KEY", "stats-key")
    async with running_app(people_tree(tmp_path, AUTH)) as (client, _):
        forged = {COOKIE: "admin.9999999999." + "0" * 64}
        assert (await client.get("/v1/routing/statistics", cookies=forged)).status == 401
        page = await client.get("/dashboard", cookies=forged, allow_redirects=False)
        assert page.status == 303 and page.headers["Location"] == "/dashboard/login"


async def test_a_question_asked_while_the_log_opens_is_logged_and_statistics_wait_for_it(tmp_path):
    """The local log opens in the background once the app has started: the first question and the first
    statistics request do not race it (the question is queued, the statistics wait for the table)."""
    async with running_app(people_tree(tmp_path, STATS)) as (client, _):
        opening = client.app[STATS_LOG].health()["status"]
        await ask(client, QUESTIONS[:1])
        resp = await client.get("/v1/routing/statistics?since=1h")  # no flush first
        assert resp.status == 200, await resp.text()
        await client.app[STATS_LOG].flush()
        log = (await stats(client, "?since=1h"))["routing_log"]
    assert opening in ("starting", "ok")  # "ok" only if the opening won the race with this line
    assert log["enabled"] is True and log["total"] == 1
