"""The intent-model refit does not block routability (issue 12 item 5).

After a reload that adds a template, a question for it routes to it at once (embedding and string
similarity decide; the intent model reports it is refitting), while the model refits in the background
on its own thread; then the new model is swapped in. Later edits do not wait for a running refit: the
newest reload's fit wins and a superseded one is never applied.

The refit thread is held busy by the test (a job waiting on an event on REFIT_POOL) so that "before the
refit finishes" is a state the test can look at, not a race.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from server.bulkhead import REFIT_POOL
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, make_people_db, make_tree

CONFIG = BASE_CONFIG + "composite_retrieval:\n  intent_model: {enabled: true}\n"
ADAPTERS = """
adapters:
  - name: people
    type: sql
    connection: {url: "sqlite:///templates/people.db"}
    templates: ["templates/people/*.yaml"]
  - name: all
    type: composite
    child_adapters: [people]
"""
AVERAGE = """
  - id: average_salary_by_department
    description: Average salary in each department
    nl_examples: ["What is the average salary in each department?", "mean pay per department"]
    sql: "SELECT department, AVG(salary) AS average FROM people GROUP BY department ORDER BY department"
"""
NEWEST = """
  - id: highest_paid_person
    description: The person with the highest salary
    nl_examples: ["Who earns the most?", "who is the highest paid employee?"]
    sql: "SELECT name, salary FROM people ORDER BY salary DESC LIMIT 1"
"""


@contextmanager
def refit_thread_busy():
    """Occupy the one refit thread until the block ends."""
    release, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        release.wait(60)

    job = REFIT_POOL.submit(hold)
    started.wait(10)
    try:
        yield
    finally:
        release.set()
        job.result(10)


def intent(holder) -> dict:
    return holder.current.adapters["all"].describe()["multistage_selection"]["intent_model"]


async def route(client, question: str) -> dict:
    resp = await client.post("/v1/test_routing", json={"query": question, "adapter": "all"})
    assert resp.status == 200
    return await resp.json()


async def test_new_template_routes_before_the_refit_and_the_newest_refit_wins(tmp_path):
    make_people_db(tmp_path / "templates" / "people.db")
    library = tmp_path / "templates" / "people" / "people.yaml"
    tree = make_tree(tmp_path, CONFIG, {"a.yaml": ADAPTERS}, {"people/people.yaml": PEOPLE_LIBRARY})
    async with running_app(tree) as (client, holder):
        first = intent(holder)
        assert first["fitted"] is True and first["fitting"] is False

        with refit_thread_busy():
            library.write_text(library.read_text() + AVERAGE)
            started = time.monotonic()
            status = await holder.reload()
            assert status.ok and time.monotonic() - started < 20
            during = intent(holder)
            assert during["fitting"] is True and during["fitted"] is True and during["source"] == "previous"
            body = await route(client, "what is the average salary in each department?")
            assert body["routing_decision"]["selected_template"] == "average_salary_by_department"
            assert [e["stage"] for e in body["stage_errors"]] == ["intent_model"]
            assert "refitting" in body["stage_errors"][0]["error"]
            superseded = holder.current.adapters["all"]

            library.write_text(library.read_text() + NEWEST)  # a later edit while the first refit waits
            status = await holder.reload()
            assert status.ok
            body = await route(client, "who is the highest paid employee?")
            assert body["routing_decision"]["selected_template"] == "highest_paid_person"

        composite = holder.current.adapters["all"]
        await composite.refitted()
        await superseded.refitted()
        after = intent(holder)
        assert after["fitting"] is False and after["source"] == "fitted" and after["generation"] == 2
        # the superseded composite never applied its fit: it kept the stand-in (generation 1)
        assert intent_of(superseded)["generation"] == 1 and intent_of(superseded)["fitting"] is False
        for question, template in [
            ("what is the average salary in each department?", "average_salary_by_department"),
            ("who is the highest paid employee?", "highest_paid_person"),
        ]:
            body = await route(client, question)
            assert body["routing_decision"]["selected_template"] == template
            assert body.get("stage_errors", []) == []
            assert body["all_matches"][0]["intent_model_score"] > 0


def intent_of(composite) -> dict:
    return composite.describe()["multistage_selection"]["intent_model"]
