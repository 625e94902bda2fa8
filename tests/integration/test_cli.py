"""The command line as an operator runs it (real subprocesses)."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from server.cli.main import _parser, with_default_command
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.servers import free_port

RUN = Path(__file__).resolve().parents[2] / "run.py"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(RUN), "--log-level", "WARNING", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_validate_ok_with_config_after_the_command(tmp_path):
    config_dir = people_tree(tmp_path)
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "OK: 1 adapters, 3 templates, 3 files",
        "checked against their sources: 3 of 3 templates",
    ]


def test_validate_reports_every_problem_with_file_and_line_and_exits_1(tmp_path):
    config_dir = people_tree(tmp_path)
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(
        library.read_text().replace("    result_format: summary\n", "    result_format: summery\n    colour: blue\n")
    )
    (config_dir / "config.yaml").write_text((config_dir / "config.yaml").read_text() + "srever: {port: 1}\n")
    done = run("--config", str(config_dir), "validate", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "configuration errors (3):"
    assert "  config/config.yaml:5: srever: unknown key" in lines
    assert "  templates/people/people.yaml:13: templates[1].colour: unknown key" in lines
    assert any(
        line.startswith("  templates/people/people.yaml:12: templates[1].result_format: ") and "summery" in line
        for line in lines
    )


def test_reindex_rebuilds_every_store_and_says_what_it_did(tmp_path):
    config_dir = people_tree(tmp_path)
    done = run("reindex", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["reindexed"] == {"people": {"templates": 3, "texts_embedded": 10}}
    assert body["texts_computed_by_model"] == 10  # a fresh tree: nothing in the embedding cache yet
    again = json.loads(run("reindex", "--config", str(config_dir), cwd=tmp_path).stdout)
    assert again["reindexed"] == body["reindexed"] and again["texts_computed_by_model"] == 0


def test_a_missing_source_is_named_without_a_traceback(tmp_path):
    config_dir = people_tree(tmp_path)
    (tmp_path / "templates" / "people.db").unlink()
    done = run("route", "how many people are there?", "--execute", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "error: adapter 'people': cannot connect to the database"


def test_fit_thresholds_with_a_missing_labelled_file_says_so(tmp_path):
    config_dir = people_tree(tmp_path)
    done = run("fit-thresholds", "--labelled", str(tmp_path / "nope.yaml"), "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "nope.yaml" in done.stderr.strip().splitlines()[-1]


def test_a_config_without_an_enabled_adapter_is_refused_by_validate_and_serve(tmp_path):
    """An adapters folder left empty (moved, a bad deploy) or every adapter disabled: nothing to serve is an
    error, not an OK and a server that answers 404 to everything."""
    config_dir = people_tree(tmp_path)
    adapters = config_dir / "adapters" / "people.yaml"
    text = adapters.read_text()
    adapters.unlink()
    expected = "  config/adapters: nothing to serve: no adapter is defined in its *.yaml files, or every one has "
    for args in (("validate",), ("serve", "--port", str(free_port()))):
        done = run("--config", str(config_dir), *args, cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert expected + "enabled: false" in done.stderr.splitlines()
    adapters.write_text(text.replace("type: sql", "type: sql\n    enabled: false", 1))
    assert "enabled: false" in adapters.read_text()
    done = run("--config", str(config_dir), "validate", cwd=tmp_path)
    assert done.returncode == 1 and "nothing to serve" in done.stderr
    adapters.write_text(text)
    assert run("--config", str(config_dir), "validate", cwd=tmp_path).returncode == 0


def test_validate_checks_sql_with_the_dialect_of_the_adapter_url(tmp_path):
    """Nothing connects: the PostgreSQL URL below points at a port nobody listens on."""
    config_dir = people_tree(tmp_path)
    (config_dir / "adapters" / "warehouse.yaml").write_text(
        "adapters:\n  - name: warehouse\n    type: sql\n"
        '    connection: {url: "postgresql+psycopg://nobody@127.0.0.1:9/none"}\n'
        '    templates: ["templates/warehouse.yaml"]\n'
    )
    (tmp_path / "templates" / "warehouse.yaml").write_text(
        "templates:\n  - id: next_id\n    description: Take the next id\n    sql: \"SELECT nextval('s') AS n\"\n"
        '  - id: fine\n    description: Count things\n    sql: "SELECT count(*) AS n FROM things"\n'
    )
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "configuration errors (1):"
    assert lines[1].startswith("  templates/warehouse.yaml:2: ")
    assert "nextval() is not allowed" in lines[1]


VALUES_FROM_LIBRARY = """templates:
  - id: salary_of_person
    description: The salary of one person, looked up by name
    nl_examples: ["what does Ada earn?", "salary of Grace"]
    parameters:
      - name: person
        required: true
        values_from:
          query: "{query}"
    sql: "SELECT name, salary FROM people WHERE name = :person"
"""


def test_validate_refuses_a_values_from_query_that_writes(tmp_path):
    config_dir = people_tree(tmp_path)
    (tmp_path / "templates" / "people" / "lookup.yaml").write_text(
        VALUES_FROM_LIBRARY.format(query="DELETE FROM people")
    )
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "configuration errors (1):",
        "  templates/people/lookup.yaml:9: templates[0].parameters[0].values_from.query: "
        "sql must be a read-only query (SELECT/WITH), not DELETE",
    ]


def test_validate_refuses_values_from_queries_with_binds_or_two_statements(tmp_path):
    config_dir = people_tree(tmp_path)
    library = tmp_path / "templates" / "people" / "lookup.yaml"
    library.write_text(VALUES_FROM_LIBRARY.format(query="SELECT name FROM people WHERE department = :dept"))
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1 and "values_from query takes no parameters (found ['dept'])" in done.stderr
    library.write_text(VALUES_FROM_LIBRARY.format(query="SELECT name FROM people; SELECT 1"))
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1 and "exactly one statement (found 2)" in done.stderr


def test_validate_checks_values_from_with_the_dialect_of_the_adapter_url(tmp_path):
    config_dir = people_tree(tmp_path)
    (config_dir / "adapters" / "warehouse.yaml").write_text(
        "adapters:\n  - name: warehouse\n    type: sql\n"
        '    connection: {url: "postgresql+psycopg://nobody@127.0.0.1:9/none"}\n'
        '    templates: ["templates/warehouse.yaml"]\n'
    )
    (tmp_path / "templates" / "warehouse.yaml").write_text(
        VALUES_FROM_LIBRARY.format(query="SELECT name FROM people WHERE pg_sleep(1) IS NULL")
    )
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "configuration errors (1):"
    assert lines[1].startswith("  templates/warehouse.yaml:2: templates[id=salary_of_person].parameters[0].values_from")
    assert "pg_sleep() is not allowed" in lines[1]


def test_an_absolute_template_glob_validates_and_answers(tmp_path):
    config_dir = people_tree(tmp_path)
    adapter = config_dir / "adapters" / "people.yaml"
    absolute = str(tmp_path / "templates" / "people" / "*.yaml")
    adapter.write_text(adapter.read_text().replace('"templates/people/*.yaml"', f'"{absolute}"'))
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "OK: 1 adapters, 3 templates, 3 files",
        "checked against their sources: 3 of 3 templates",
    ]
    done = run("route", "who works in the Sales department?", "--execute", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert '"Linus"' in done.stdout


def test_an_absolute_glob_matching_nothing_is_a_file_and_line_error(tmp_path):
    config_dir = people_tree(tmp_path)
    adapter = config_dir / "adapters" / "people.yaml"
    absolute = str(tmp_path / "nowhere" / "*.yaml")
    adapter.write_text(adapter.read_text().replace('"templates/people/*.yaml"', f'"{absolute}"'))
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "configuration errors (1):",
        f"  config/adapters/people.yaml:5: adapters[0].templates: no template file matches ['{absolute}']",
    ]


def test_a_template_file_that_became_a_dangling_link_is_an_error_not_missing_templates(tmp_path):
    """A library replaced by a link to nothing (a deploy that moved the target): the load names the file
    instead of serving without its templates."""
    config_dir = people_tree(tmp_path)
    library = next((tmp_path / "templates" / "people").glob("*.yaml"))
    library.unlink()
    library.symlink_to(tmp_path / "moved-away.yaml")
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"templates/people/{library.name}" in done.stderr and "cannot read" in done.stderr


def test_a_child_with_errors_of_its_own_is_not_also_an_unknown_child(tmp_path):
    """One misspelt key in an adapter is one error: the composite naming it as a child does not add
    'unknown child adapter' (the adapter exists; it is broken, and that is said where it is broken)."""
    config_dir = people_tree(tmp_path)
    adapter = config_dir / "adapters" / "people.yaml"
    adapter.write_text(
        adapter.read_text().replace(
            "    confidence_threshold: 0.3\n", "    confidence_threshold: 0.3\n    max_rowz: 5\n"
        )
        + "  - name: everything\n    type: composite\n    child_adapters: [people]\n"
    )
    done = run("validate", "--config", str(config_dir), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "configuration errors (1):",
        "  config/adapters/people.yaml:7: adapters[0].max_rowz: unknown key",
    ]


def _ctrl_c_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_serve_options_work_without_the_word_serve(tmp_path, stop):
    """`serve` is the default command, so `run.py --port N` serves on N (it used to be `invalid choice`);
    SIGTERM and Ctrl-C stop it cleanly: the routing log writes what it holds, exit 0, no traceback."""
    config_dir = people_tree(tmp_path, BASE_CONFIG + "stats: {flush_interval: 600}\n")  # written only at close
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-X",
            "faulthandler",
            str(RUN),
            *("--log-level", "WARNING", "--port", str(port)),
            "--config",
            str(config_dir),
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a test run started in the background by a non-interactive shell (how CI may
        # start it) inherits SIGINT ignored, and so would the server, which then rightly ignores Ctrl-C
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        status = None
        while status != 200 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
                    status, body = reply.status, json.loads(reply.read())
            except OSError:  # still loading: nobody listens yet
                time.sleep(0.2)
        assert status == 200
        assert body["status"] == "ok"
        question = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/query",
            data=json.dumps({"query": "Who works in Engineering?"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(question, timeout=30) as reply:
            assert reply.status == 200
    finally:
        proc.send_signal(stop)
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # -X faulthandler: every thread's stack to stderr
            proc.wait(10)
            pytest.fail(f"still running 60 s after {stop.name}:\n{proc.stderr.read() if proc.stderr else ''}")
        finally:
            if proc.poll() is None:
                proc.kill()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert code == 0, stderr
    assert "Traceback" not in stderr
    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "routing_log.sqlite3")) as log:
        assert log.execute("SELECT count(*) FROM routing_log").fetchone()[0] == 1


def test_the_default_command_goes_after_the_global_options():
    _, commands = _parser()
    assert with_default_command(["--port", "9000"], commands) == ["serve", "--port", "9000"]
    assert with_default_command(["--config", "c", "--host", "127.0.0.1", "--workers", "2"], commands) == [
        "--config",
        "c",
        "serve",
        "--host",
        "127.0.0.1",
        "--workers",
        "2",
    ]
    assert with_default_command(["--log-level=DEBUG", "--port", "1"], commands) == [
        "--log-level=DEBUG",
        "serve",
        "--port",
        "1",
    ]
    for unchanged in ([], ["--config", "c"], ["validate"], ["--config", "c", "route", "q"], ["--help"], ["bogus"]):
        assert with_default_command(unchanged, commands) == unchanged


def test_a_misspelt_command_or_option_is_still_refused(tmp_path):
    config_dir = people_tree(tmp_path)
    done = run("--config", str(config_dir), "valdate", cwd=tmp_path)
    assert done.returncode == 2 and "invalid choice: 'valdate'" in done.stderr
    done = run("--config", str(config_dir), "--prot", "9000", cwd=tmp_path)
    assert done.returncode == 2 and "unrecognized arguments: --prot 9000" in done.stderr
