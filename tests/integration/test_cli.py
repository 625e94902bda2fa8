"""The command line as an operator runs it (real subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from server.testing.configs import people_tree

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
    assert done.stdout.strip() == "OK: 1 adapters, 3 templates, 3 files"


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
    assert done.stdout.strip() == "OK: 1 adapters, 3 templates, 3 files"
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
