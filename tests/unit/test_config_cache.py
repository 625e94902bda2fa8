"""The config cache (config/parse_cache.py): a load parses only the files and bodies that changed, a corrupt
or foreign cache file is passed over, and errors keep their file:line:key when the document came from the
cache. Counts are read from `LoadedConfig.cache_counts`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.config.errors import ConfigError
from server.runtime.loader import load_config
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, people_tree

MORE = """
templates:
  - id: salary_of
    description: The salary of one person
    nl_examples: ["what does Ada earn"]
    parameters:
      - {name: name, type: string, required: true}
    sql: "SELECT salary FROM people WHERE name = :name"
"""


def tree(tmp_path: Path, config: str = BASE_CONFIG) -> Path:
    config_dir = people_tree(tmp_path, config)
    (tmp_path / "templates" / "people" / "more.yaml").write_text(MORE, encoding="utf-8")
    return config_dir


def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "data" / "config_cache"


def test_a_second_load_reuses_every_unchanged_file_and_check(tmp_path):
    config = tree(tmp_path)
    first = load_config(config)
    assert first.cache_counts is not None
    assert first.cache_counts.checks_hits == 0 and first.cache_counts.checks_run >= 4  # 4 SQL bodies
    assert first.cache_counts.yaml_parsed == 3  # the adapter file and the two libraries
    second = load_config(config)
    assert second.cache_counts.yaml_parsed == 0 and second.cache_counts.checks_run == 0
    assert second.cache_counts.yaml_hits == first.cache_counts.yaml_parsed
    assert second.cache_counts.checks_hits == first.cache_counts.checks_run
    assert second.templates == first.templates  # the same templates, lines and parsed bodies


def test_a_changed_file_is_parsed_again_and_only_its_new_body_checked(tmp_path):
    config = tree(tmp_path)
    first = load_config(config)
    more = tmp_path / "templates" / "people" / "more.yaml"
    more.write_text(MORE.replace("WHERE name = :name", "WHERE name = :name AND salary > 0"), encoding="utf-8")
    again = load_config(config)
    assert again.cache_counts.yaml_parsed == 1 and again.cache_counts.yaml_hits == first.cache_counts.yaml_parsed - 1
    assert again.cache_counts.checks_run >= 1  # the edited body (and its dialect checks)
    assert again.cache_counts.checks_hits >= 3  # the three unchanged bodies of people.yaml
    body = next(t.body for t in again.templates["people"] if t.id == "salary_of")
    assert "salary > 0" in body
    # a body that no longer passes is refused again, also when it was accepted from the cache before
    more.write_text(MORE.replace("SELECT salary", "DELETE"), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert any("more.yaml:8: templates[0].sql" in str(i) for i in info.value.issues)


def test_a_refused_body_is_remembered_as_refused(tmp_path):
    config = tree(tmp_path)
    more = tmp_path / "templates" / "people" / "more.yaml"
    more.write_text(MORE.replace("SELECT salary FROM people", "DROP TABLE people; SELECT 1"), encoding="utf-8")
    messages = []
    for _ in range(2):
        with pytest.raises(ConfigError) as info:
            load_config(config)
        messages.append([str(i) for i in info.value.issues])
    assert messages[0] == messages[1] and "more.yaml:8: templates[0].sql" in messages[0][0]


@pytest.mark.parametrize("garbage", [b"{not json", b"\xff\xfe", b'{"key": "other", "lines": []}', b"[1, 2]"])
def test_corrupt_cache_files_are_ignored_and_rewritten(tmp_path, garbage):
    config = tree(tmp_path)
    first = load_config(config)
    files = [*sorted((cache_dir(tmp_path) / "yaml").glob("*.json")), cache_dir(tmp_path) / "checks.json"]
    assert len(files) == first.cache_counts.yaml_parsed + 1
    for path in files:
        path.write_bytes(garbage)
    again = load_config(config)
    assert again.templates == first.templates
    assert again.cache_counts.ignored_files >= len(files) - 1 and again.cache_counts.yaml_hits == 0
    assert again.cache_counts.checks_hits == 0
    third = load_config(config)  # rewritten whole by the load that passed over them
    assert third.cache_counts.yaml_parsed == 0 and third.cache_counts.checks_run == 0


def test_a_cache_entry_for_other_content_is_never_used(tmp_path):
    """An entry copied under another file's key (as a stale or tampered cache would be) is refused."""
    config = tree(tmp_path)
    load_config(config)
    entries = sorted((cache_dir(tmp_path) / "yaml").glob("*.json"))
    a, b = (json.loads(p.read_text()) for p in entries[:2])
    entries[0].write_text(json.dumps({**b, "key": b["key"]}))  # b's entry under a's name
    again = load_config(config)
    assert again.cache_counts.yaml_parsed >= 1
    assert {t.id for t in again.templates["people"]} == {
        "people_in_department",
        "headcount_by_department",
        "person_by_name",
        "salary_of",
    }
    assert a["key"] != b["key"]


def test_errors_name_file_line_and_key_when_the_document_came_from_the_cache(tmp_path):
    """Validation errors found after a cache hit point at the same line as a fresh parse does."""
    config = tree(tmp_path)
    bad = PEOPLE_LIBRARY.replace("    result_format: summary\n", "    result_format: sumary\n")
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(bad, encoding="utf-8")
    seen = []
    for _ in range(2):
        with pytest.raises(ConfigError) as info:
            load_config(config)
        seen.append([str(i) for i in info.value.issues])
    assert seen[0] == seen[1]
    assert seen[0][0].startswith("templates/people/people.yaml:13: templates[1].result_format:")
    assert (cache_dir(tmp_path) / "yaml").exists() and any((cache_dir(tmp_path) / "yaml").iterdir())


def test_yaml_syntax_errors_keep_their_line(tmp_path):
    config = tree(tmp_path)
    load_config(config)
    (tmp_path / "templates" / "people" / "more.yaml").write_text(MORE.replace("    description:", "  description:"))
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert any(str(i).startswith("templates/people/more.yaml:4:") for i in info.value.issues)


def test_documents_that_read_the_environment_are_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("PEOPLE_DESC", "first")
    config = tree(tmp_path)
    more = tmp_path / "templates" / "people" / "more.yaml"
    more.write_text(MORE.replace("The salary of one person", "${PEOPLE_DESC}"), encoding="utf-8")
    assert next(t for t in load_config(config).templates["people"] if t.id == "salary_of").description == "first"
    monkeypatch.setenv("PEOPLE_DESC", "second")
    again = load_config(config)
    assert next(t for t in again.templates["people"] if t.id == "salary_of").description == "second"


def test_the_cache_can_be_turned_off(tmp_path):
    config = tree(tmp_path, BASE_CONFIG + "config_cache: {enabled: false}\n")
    assert load_config(config).cache_counts is None
    assert not cache_dir(tmp_path).exists()
