"""Hot reload against a running server on loopback: the file watcher picks up edits, a broken config is
rejected as a whole while the last good one keeps answering, and reloads under load lose nothing."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from server.runtime.holder import RuntimeHolder
from server.runtime.watcher import attach_watcher
from server.testing.configs import PEOPLE_ADAPTER, people_tree, write
from server.testing.loopback import serving
from server.testing.polling import eventually
from server.web.app import create_app

OUT_OF_SCOPE = "what is the boiling point of mercury?"


@asynccontextmanager
async def live_server(config_dir: Path, watch: bool = True):
    """The real app with its file watcher on 127.0.0.1:<free port>, and a client session for it."""
    holder = RuntimeHolder(config_dir, close_grace=0.2)
    await holder.start()
    app = create_app(holder)
    watcher = attach_watcher(app, holder, debounce_ms=500, step_ms=50) if watch else None
    try:
        async with serving(app) as url:
            if watcher is not None:
                await asyncio.wait_for(watcher.ready.wait(), 5)
            async with aiohttp.ClientSession(base_url=url) as session:
                yield session, holder
    finally:
        await holder.close()


async def ask(session: aiohttp.ClientSession, question: str, adapter: str = "people") -> tuple[int, dict]:
    async with session.post("/v1/query", json={"query": question, "adapter": adapter}) as resp:
        return resp.status, await resp.json()


async def health(session: aiohttp.ClientSession) -> dict:
    async with session.get("/health") as resp:
        return await resp.json()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


async def test_editing_nl_examples_changes_routing_without_restart(tmp_path):
    library = tmp_path / "templates" / "people" / "people.yaml"
    async with live_server(people_tree(tmp_path)) as (session, holder):
        status, body = await ask(session, OUT_OF_SCOPE)
        assert status == 200 and body["metadata"]["status"] == "no_match"

        edit(library, '"headcount per department"', f'"headcount per department", "{OUT_OF_SCOPE}"')

        async def routed() -> bool:
            _, body = await ask(session, OUT_OF_SCOPE)
            return body["metadata"]["template_id"] == "headcount_by_department"

        await eventually(routed)
        changes = holder.last_load.changes
        assert changes["templates"]["people"]["changed"] == ["headcount_by_department"]
        assert changes["full_parse"] is False and changes["files_parsed"] == 1
        _, body = await ask(session, OUT_OF_SCOPE)
        assert body["rows"] == [
            {"department": "Engineering", "n": 2},
            {"department": "HR", "n": 1},
            {"department": "Sales", "n": 1},
        ]


async def test_adding_and_removing_an_adapter_file(tmp_path):
    config_dir = people_tree(tmp_path)
    async with live_server(config_dir) as (session, holder):
        extra = write(config_dir / "adapters" / "staff.yaml", PEOPLE_ADAPTER.replace("name: people", "name: staff"))

        async def has_staff() -> bool:
            return "staff" in (await health(session))["adapters"]

        await eventually(has_staff)
        status, body = await ask(session, "who works in the Sales department?", adapter="staff")
        assert status == 200 and body["rows"] == [{"name": "Linus"}]
        changes = holder.last_load.changes
        assert changes["adapters"]["added"] == ["staff"] and changes["full_parse"] is True
        assert changes["vectors_reused"] == 3  # same templates as 'people': vectors copied, nothing embedded
        assert changes["adapters"]["reused"] == ["people"]

        extra.unlink()

        async def staff_gone() -> bool:
            return "staff" not in (await health(session))["adapters"]

        await eventually(staff_gone)
        status, body = await ask(session, "who works in the Sales department?", adapter="staff")
        assert status == 404 and body["error"]["code"] == "not_found"
        assert holder.last_load.changes["adapters"]["removed"] == ["staff"]
        status, _ = await ask(session, "who works in the Sales department?")
        assert status == 200


async def test_broken_yaml_is_rejected_and_old_config_keeps_answering_until_fixed(tmp_path):
    library = tmp_path / "templates" / "people" / "people.yaml"
    async with live_server(people_tree(tmp_path)) as (session, holder):
        generation = holder.generation
        # two mistakes in one save: an unknown key, and a new example that would change routing
        edit(library, "    result_format: summary\n", "    result_format: summary\n    colour: blue\n")
        edit(library, '"headcount per department"', f'"headcount per department", "{OUT_OF_SCOPE}"')

        async def rejected() -> bool:
            return (await health(session))["config"]["last_load"]["ok"] is False

        await eventually(rejected)
        report = await health(session)
        assert report["status"] == "degraded"
        errors = report["config"]["last_load"]["errors"]
        assert errors == [
            {"file": "templates/people/people.yaml", "line": 13, "key": "templates[1].colour", "message": "unknown key"}
        ]
        assert report["config"]["last_good_load"]["ok"] is True
        assert holder.generation == generation
        # the old config answers, and the half of the change that was valid is not applied either
        status, body = await ask(session, "who works in the Engineering department?")
        assert status == 200 and body["rows"] == [{"name": "Ada"}, {"name": "Grace"}]
        _, body = await ask(session, OUT_OF_SCOPE)
        assert body["metadata"]["status"] == "no_match"

        edit(library, "    colour: blue\n", "")

        async def recovered() -> bool:
            return (await health(session))["config"]["last_load"]["ok"] is True

        await eventually(recovered)
        assert (await health(session))["status"] == "ok"
        _, body = await ask(session, OUT_OF_SCOPE)
        assert body["metadata"]["template_id"] == "headcount_by_department"
        assert holder.generation == generation + 1


async def test_fixing_a_library_the_good_config_does_not_use_yet_is_noticed(tmp_path):
    """A new adapter whose library is broken: the error is in a directory the serving config never
    loaded, and saving the fix there must still trigger a reload."""
    config_dir = people_tree(tmp_path)
    async with live_server(config_dir) as (session, _):
        broken = write(
            tmp_path / "templates" / "staff" / "staff.yaml",
            "templates:\n  - id: staff_count\n    description: Count staff\n    sql: SELECT FROM\n",
        )
        write(
            config_dir / "adapters" / "staff.yaml",
            PEOPLE_ADAPTER.replace("name: people", "name: staff").replace("templates/people/", "templates/staff/"),
        )

        async def rejected() -> bool:
            load = (await health(session))["config"]["last_load"]
            return load["ok"] is False and load["errors"][0]["file"] == "templates/staff/staff.yaml"

        await eventually(rejected)
        broken.write_text(
            "templates:\n  - id: staff_count\n    description: Count staff\n    sql: SELECT COUNT(*) AS n FROM people\n"
        )

        async def has_staff() -> bool:
            return "staff" in (await health(session))["adapters"]

        await eventually(has_staff)
        status, body = await ask(session, "Count staff", adapter="staff")
        assert status == 200 and body["rows"] == [{"n": 4}]


async def test_admin_reload_reports_changes_and_validation_errors(tmp_path):
    library = tmp_path / "templates" / "people" / "people.yaml"
    async with live_server(people_tree(tmp_path), watch=False) as (session, _):
        edit(library, "id: person_by_name", "id: person_lookup")  # a rename: same texts and query
        edit(library, '"headcount per department"', '"staff numbers by team"')
        with open(library, "a") as out:
            out.write(
                "  - id: salary_total\n    description: Total salary bill\n"
                "    sql: SELECT SUM(salary) AS total FROM people\n"
            )
        async with session.post("/admin/reload") as resp:
            assert resp.status == 200
            body = await resp.json()
        assert body["ok"] is True and body["seconds"] > 0
        assert body["changes"]["templates"] == {
            "people": {
                "added": ["salary_total"],
                "removed": [],
                "changed": ["headcount_by_department"],
                "renamed": [{"from": "person_by_name", "to": "person_lookup"}],
            }
        }
        assert body["changes"]["adapters"] == {"added": [], "removed": [], "changed": [], "renamed": [], "reused": []}
        assert body["changes"]["settings"] == []

        config_yaml = tmp_path / "config" / "config.yaml"
        config_yaml.write_text(config_yaml.read_text() + "server: {max_question_chars: 500}\n")
        async with session.post("/admin/reload") as resp:
            body = await resp.json()
        assert body["ok"] is True and body["changes"]["settings"] == ["server"]  # what a save of config.yaml moved

        edit(library, "description: Total salary bill", "description: [unclosed")
        async with session.post("/admin/reload") as resp:
            assert resp.status == 422
            body = await resp.json()
        assert body["ok"] is False
        assert body["errors"][0]["file"] == "templates/people/people.yaml"
        assert body["errors"][0]["line"] == 21

        async with session.post("/admin/reload") as resp:  # nothing saved since: still rejected
            assert resp.status == 422


COMPOSITE = """
adapters:
  - name: payroll
    type: sql
    connection: {url: "sqlite:///templates/people.db"}
    templates: ["templates/payroll/*.yaml"]
    confidence_threshold: 0.3
  - name: company
    type: composite
    child_adapters: [people, payroll]
    confidence_threshold: 0.3
"""

PAYROLL = """
templates:
  - id: salary_total
    description: Total salary bill of the company
    nl_examples: ["how much do we pay in salaries?", "total payroll cost"]
    sql: SELECT SUM(salary) AS total FROM people
"""


async def test_composite_uses_the_current_children_after_a_child_reload(tmp_path):
    config_dir = people_tree(tmp_path)
    write(config_dir / "adapters" / "company.yaml", COMPOSITE)
    write(tmp_path / "templates" / "payroll" / "payroll.yaml", PAYROLL)
    async with live_server(config_dir) as (session, holder):
        old_payroll = holder.current.get("payroll")
        generation = holder.generation
        closed: list[None] = []  # one entry per replaced config closed after draining (its old payroll with it)
        holder.retired_listeners.append(lambda: closed.append(None))
        status, body = await ask(session, OUT_OF_SCOPE, adapter="company")
        assert status == 200 and body["metadata"]["status"] == "no_match"
        # change the child's settings (a new adapter object and pool) and its examples in one go
        edit(
            config_dir / "adapters" / "company.yaml",
            "confidence_threshold: 0.3\n  - name: company",
            "confidence_threshold: 0.3\n    max_rows: 10\n  - name: company",
        )
        edit(
            tmp_path / "templates" / "payroll" / "payroll.yaml",
            '"total payroll cost"',
            f'"total payroll cost", "{OUT_OF_SCOPE}"',
        )

        async def routed() -> bool:
            _, body = await ask(session, OUT_OF_SCOPE, adapter="company")
            return body["metadata"]["composite_routing"]["selected_adapter"] == "payroll"

        await eventually(routed)
        company = holder.current.get("company")
        assert company.routing_sources()[1] is holder.current.get("payroll") is not old_payroll
        # every config this test replaced has been closed, the old payroll adapter with it
        await eventually(lambda: holder.generation > generation and len(closed) == holder.generation - generation)
        status, body = await ask(session, OUT_OF_SCOPE, adapter="company")
        assert status == 200 and body["rows"] == [{"total": 410000.0}]


async def test_queries_during_twenty_reloads_get_answers_and_no_5xx(tmp_path):
    """Bounded loopback load: 4 clients query continuously while 20 reloads swap configs (library edits
    and adapter-setting edits, so pools are replaced and closed under load)."""
    config_dir = people_tree(tmp_path)
    library = tmp_path / "templates" / "people" / "people.yaml"
    adapter_file = config_dir / "adapters" / "people.yaml"
    sent = answered = 0
    statuses: dict[int, int] = {}
    stop = asyncio.Event()

    async with live_server(config_dir, watch=False) as (session, holder):

        async def client(question: str, rows: list[dict]) -> None:
            nonlocal sent, answered
            while not stop.is_set():
                sent += 1
                async with session.post("/v1/query", json={"query": question}) as resp:
                    statuses[resp.status] = statuses.get(resp.status, 0) + 1
                    body = await resp.json()
                    answered += resp.status == 200 and body["rows"] == rows

        clients = [
            asyncio.create_task(client(q, rows))
            for q, rows in (
                ("who works in Engineering?", [{"name": "Ada"}, {"name": "Grace"}]),
                ("show me the people in Sales", [{"name": "Linus"}]),
                ("list staff of the HR department", [{"name": "Ken"}]),
                (
                    "how many people are in each department?",
                    [
                        {"department": "Engineering", "n": 2},
                        {"department": "HR", "n": 1},
                        {"department": "Sales", "n": 1},
                    ],
                ),
            )
        ]
        generation = holder.generation
        original_library, original_adapter = library.read_text(), adapter_file.read_text()
        for i in range(20):
            if i % 2:
                adapter_file.write_text(original_adapter.replace("threshold: 0.3", f"threshold: 0.3{i}"))
            else:
                library.write_text(original_library.replace('per department"', f'per department {i}"'))
            async with session.post("/admin/reload") as resp:
                body = await resp.json()
                assert resp.status == 200, body
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.gather(*clients)
        assert holder.generation - generation >= 20
    assert sent > 40
    assert statuses == {200: sent}, statuses  # every request answered, none 5xx (nor any other error)
    assert answered == sent  # ... with the right rows


async def test_a_replaced_config_is_announced_once_closed_and_can_be_collected(tmp_path):
    """serve settles the heap (server/runtime/heap.py) when a replaced runtime has been closed: by then
    nothing holds it, so a full collection frees it."""
    import gc
    import weakref

    config_dir = people_tree(tmp_path)
    async with live_server(config_dir, watch=False) as (session, holder):
        old = weakref.ref(holder.current)
        collected: list[bool] = []
        holder.retired_listeners.append(lambda: collected.append(gc.collect() >= 0 and old() is None))
        async with session.post("/admin/reload") as resp:
            assert resp.status == 200
        await eventually(lambda: asyncio.sleep(0, bool(collected)))
    assert collected == [True]


async def test_a_blank_config_yaml_is_refused_and_the_old_settings_stay(tmp_path):
    """A truncated save of config.yaml (blank, or comments only) would turn every setting, auth included,
    back to its default: it is refused like a deleted file, and the settings in force stay."""
    config = people_tree(tmp_path, "store: {backend: memory}\nserver: {max_question_chars: 40}\n")
    async with live_server(config) as (session, holder):
        config_yaml = config / "config.yaml"
        config_yaml.write_text("# every setting commented out\n# server: {max_question_chars: 40}\n")

        async def rejected() -> bool:
            return (await health(session))["config"]["last_load"]["ok"] is False

        await eventually(rejected)
        errors = (await health(session))["config"]["last_load"]["errors"]
        assert errors == [{"file": "config/config.yaml", "line": None, "key": "", "message": errors[0]["message"]}]
        assert "the file is empty" in errors[0]["message"]
        assert holder.current.config.app.server.max_question_chars == 40  # not back to the default 2000
        status, body = await ask(session, "who works in the Engineering department, tell me everyone please?")
        assert status == 400 and "40" in body["error"]["message"]
