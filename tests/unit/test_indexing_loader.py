"""The reload loader parses only changed library files and still gives what a full load gives."""

from __future__ import annotations

import os
import time

import pytest

from server.config.errors import ConfigError
from server.runtime.incremental import IncrementalLoader
from server.runtime.loader import load_config
from server.testing.configs import PEOPLE_ADAPTER, people_tree, write

SECOND_ADAPTER = PEOPLE_ADAPTER.replace("name: people", "name: other").replace("templates/people/", "templates/other/")
OTHER_LIBRARY = """
templates:
  - id: total_salary
    description: Total salary bill
    sql: SELECT SUM(salary) AS total FROM people
"""


def settle(root) -> None:
    """Date every file a minute back, as if written long before the server loaded it."""
    past = time.time() - 60
    for path in root.rglob("*.yaml"):
        os.utime(path, (past, past))


@pytest.fixture
def tree(tmp_path):
    config_dir = people_tree(tmp_path)
    write(config_dir / "adapters" / "other.yaml", SECOND_ADAPTER)
    write(tmp_path / "templates" / "other" / "a.yaml", OTHER_LIBRARY)
    settle(tmp_path)
    return tmp_path, config_dir


def same_as_full_load(result_config, config_dir) -> None:
    full = load_config(config_dir)
    assert {k: [t.model_dump() for t in v] for k, v in result_config.templates.items()} == {
        k: [t.model_dump() for t in v] for k, v in full.templates.items()
    }
    assert sorted(result_config.files) == sorted(full.files)


def test_first_load_is_full_and_a_library_edit_parses_one_file(tree):
    root, config_dir = tree
    loader = IncrementalLoader(config_dir)
    first = loader.load()
    assert first.full and first.files_parsed == 2
    library = root / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text().replace("headcount per department", "staff per team"))
    second = loader.load()
    assert not second.full and second.files_parsed == 1 and not second.unchanged
    assert second.config.templates["other"] is first.config.templates["other"]  # untouched adapter: same list
    assert second.config.app is first.config.app and second.config.adapters is first.config.adapters
    same_as_full_load(second.config, config_dir)


def test_nothing_changed_is_reported_as_unchanged(tree):
    _, config_dir = tree
    loader = IncrementalLoader(config_dir)
    first = loader.load()
    again = loader.load()
    assert again.unchanged and again.files_parsed == 0 and again.config is first.config


def test_a_new_file_that_a_glob_matches_is_picked_up(tree):
    root, config_dir = tree
    loader = IncrementalLoader(config_dir)
    loader.load()
    write(root / "templates" / "other" / "b.yaml", OTHER_LIBRARY.replace("total_salary", "salary_sum"))
    result = loader.load()
    assert result.files_parsed == 1
    assert [t.id for t in result.config.templates["other"]] == ["total_salary", "salary_sum"]
    same_as_full_load(result.config, config_dir)


def test_duplicate_id_across_files_is_an_error_and_the_last_good_state_stays(tree):
    root, config_dir = tree
    loader = IncrementalLoader(config_dir)
    good = loader.load()
    extra = write(root / "templates" / "other" / "b.yaml", OTHER_LIBRARY)
    with pytest.raises(ConfigError) as caught:
        loader.load()
    with pytest.raises(ConfigError) as full:
        load_config(config_dir)
    assert [str(i) for i in caught.value.issues] == [str(i) for i in full.value.issues]
    assert str(caught.value.issues[0]) == (
        "templates/other/b.yaml:2: templates[id=total_salary]: duplicate template id "
        "in adapter 'other' (first defined in templates/other/a.yaml:2)"
    )
    extra.unlink()
    recovered = loader.load()
    assert recovered.unchanged and recovered.config is good.config


def test_an_adapter_file_change_loads_everything(tree):
    _, config_dir = tree
    loader = IncrementalLoader(config_dir)
    loader.load()
    adapter_file = config_dir / "adapters" / "other.yaml"
    adapter_file.write_text(adapter_file.read_text().replace("confidence_threshold: 0.3", "confidence_threshold: 0.5"))
    result = loader.load()
    assert result.full and result.config.adapter("other").confidence_threshold == 0.5
    write(config_dir / "adapters" / "broken.yaml", "adapters:\n  - name: x\n    type: nosuchtype\n")
    with pytest.raises(ConfigError) as caught:
        loader.load()
    assert "config/adapters/broken.yaml:3: adapters[0].type: unknown adapter type 'nosuchtype'" in str(caught.value)


def test_a_library_saved_during_a_full_load_is_parsed_again_next_time(tmp_path):
    """A file modified just before (or while) a full load is not trusted from that load's parse."""
    config_dir = people_tree(tmp_path)  # written just now
    loader = IncrementalLoader(config_dir)
    loader.load()
    second = loader.load()
    assert second.files_parsed == 1 and not second.unchanged
    third = loader.load()
    assert third.files_parsed == 0 and third.unchanged


def test_a_reload_that_leaves_a_glob_matching_nothing_names_the_adapter_file_and_line(tree):
    root, config_dir = tree
    loader = IncrementalLoader(config_dir)
    loader.load()
    (root / "templates" / "other" / "a.yaml").unlink()
    with pytest.raises(ConfigError) as caught:
        loader.load()
    (issue,) = caught.value.issues
    assert (issue.file, issue.line, issue.key) == ("config/adapters/other.yaml", 5, "adapters[0].templates")
    assert issue.message == "no template file matches ['templates/other/*.yaml']"


def test_a_library_edit_is_checked_with_the_dialect_of_the_adapter_url(tree):
    """The incremental path runs the same settings-aware check as a full load (nothing connects)."""
    root, config_dir = tree
    pg = SECOND_ADAPTER.replace("sqlite:///templates/people.db", "postgresql+psycopg://nobody@127.0.0.1:9/none")
    write(config_dir / "adapters" / "other.yaml", pg)
    loader = IncrementalLoader(config_dir)
    loader.load()
    library = root / "templates" / "other" / "a.yaml"
    library.write_text(
        OTHER_LIBRARY
        + """
  - id: salary_of_person
    description: The salary of one person
    parameters:
      - name: person
        values_from: {query: "SELECT name FROM people WHERE pg_sleep(1) IS NULL"}
    sql: SELECT salary FROM people WHERE name = :person
"""
    )
    with pytest.raises(ConfigError) as caught:
        loader.load()
    (issue,) = caught.value.issues
    assert issue.key == "templates[id=salary_of_person].parameters[0].values_from.query"
    assert issue.message == "function pg_sleep() is not allowed in a template"
