"""Config errors name file, line and key; substitution reports every missing variable at once."""

from __future__ import annotations

import pytest

from server.config.errors import ConfigError
from server.config.yaml_source import parse_yaml
from server.runtime.loader import load_config
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_tree, people_tree


def issues_of(config_dir) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(config_dir)
    return [str(i) for i in info.value.issues]


def test_valid_tree_loads(tmp_path):
    loaded = load_config(people_tree(tmp_path))
    assert [a.name for a in loaded.adapters] == ["people"]
    assert [t.id for t in loaded.templates["people"]] == [
        "people_in_department",
        "headcount_by_department",
        "person_by_name",
    ]


def test_unknown_key_in_adapter_names_file_line_and_key(tmp_path):
    adapter = PEOPLE_ADAPTER.replace(
        "    confidence_threshold: 0.3\n", "    confidence_threshold: 0.3\n    confidense: 0.5\n"
    )
    config = make_tree(tmp_path, adapters={"people.yaml": adapter}, libraries={"people/p.yaml": PEOPLE_LIBRARY})
    assert issues_of(config) == ["config/adapters/people.yaml:7: adapters[0].confidense: unknown key"]


def test_unknown_key_in_connection_block(tmp_path):
    adapter = PEOPLE_ADAPTER.replace(
        '{url: "sqlite:///templates/people.db"}', '{url: "sqlite:///templates/people.db", urll: x}'
    )
    config = make_tree(tmp_path, adapters={"people.yaml": adapter}, libraries={"people/p.yaml": PEOPLE_LIBRARY})
    assert issues_of(config) == ["config/adapters/people.yaml:4: adapters[0].connection.urll: unknown key"]


def test_bad_type_names_line(tmp_path):
    config = make_tree(tmp_path, BASE_CONFIG + "server:\n  port: eighty\n")
    [issue] = issues_of(config)
    assert issue.startswith("config/config.yaml:6: server.port: ")
    assert "integer" in issue


def test_unknown_top_level_key_in_config_yaml(tmp_path):
    config = make_tree(tmp_path, BASE_CONFIG + "stats_typo: {}\n")
    assert issues_of(config) == ["config/config.yaml:5: stats_typo: unknown key"]


def test_missing_env_vars_reported_together(tmp_path, monkeypatch):
    monkeypatch.delenv("IR_TEST_HOST", raising=False)
    monkeypatch.delenv("IR_TEST_PORT", raising=False)
    config = make_tree(tmp_path, "server:\n  host: ${IR_TEST_HOST}\n  port: ${IR_TEST_PORT}\n")
    assert issues_of(config) == [
        "config/config.yaml:2: server.host: environment variable IR_TEST_HOST is not set",
        "config/config.yaml:3: server.port: environment variable IR_TEST_PORT is not set",
    ]


def test_env_substitution_and_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_TEST_PORT", "9191")
    doc = parse_yaml("a: ${IR_TEST_PORT}\nb: ${IR_TEST_MISSING:-fallback}\nc: $${NOT_A_VAR}\n", "x.yaml")
    assert doc.data == {"a": "9191", "b": "fallback", "c": "${NOT_A_VAR}"}


def test_env_value_cannot_inject_yaml(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_TEST_EVIL", "x\nadmin: true")
    doc = parse_yaml("name: ${IR_TEST_EVIL}\n", "x.yaml")
    assert doc.data == {"name": "x\nadmin: true"}


def test_yaml_syntax_error_has_line(tmp_path):
    config = make_tree(tmp_path, "server:\n  port: [1, 2\n")
    [issue] = issues_of(config)
    assert issue.startswith("config/config.yaml:")
    assert "YAML syntax error" in issue


def test_duplicate_template_ids(tmp_path):
    dup = (
        PEOPLE_LIBRARY
        + """
  - id: person_by_name
    description: Another person lookup
    parameters: [{name: name, type: string, required: true}]
    sql: "SELECT name FROM people WHERE name = :name"
"""
    )
    config = make_tree(tmp_path, adapters={"people.yaml": PEOPLE_ADAPTER}, libraries={"people/p.yaml": dup})
    [issue] = issues_of(config)
    assert issue.startswith("templates/people/p.yaml:20: templates[id=person_by_name]: duplicate template id")
    assert "first defined in templates/people/p.yaml:13" in issue


def test_duplicate_adapter_names_across_files(tmp_path):
    config = make_tree(
        tmp_path,
        adapters={"a.yaml": PEOPLE_ADAPTER, "b.yaml": PEOPLE_ADAPTER},
        libraries={"people/p.yaml": PEOPLE_LIBRARY},
    )
    [issue] = issues_of(config)
    assert issue.startswith("config/adapters/b.yaml:2: adapters[0].name: duplicate adapter name 'people'")
    assert "config/adapters/a.yaml:2" in issue


def test_disabled_adapter_is_not_loaded(tmp_path):
    adapter = PEOPLE_ADAPTER.replace("    type: sql\n", "    type: sql\n    enabled: false\n")
    config = make_tree(tmp_path, adapters={"people.yaml": adapter}, libraries={"people/p.yaml": PEOPLE_LIBRARY})
    assert load_config(config).adapters == []


def test_unknown_adapter_type_lists_known_ones(tmp_path):
    config = make_tree(tmp_path, adapters={"x.yaml": "adapters:\n  - name: x\n    type: sqll\n"})
    [issue] = issues_of(config)
    assert issue.startswith("config/adapters/x.yaml:3: adapters[0].type: unknown adapter type 'sqll'")
    assert "'sql'" in issue


def test_placeholder_must_be_declared_and_vice_versa(tmp_path):
    library = """
templates:
  - id: t1
    description: d
    sql: "SELECT name FROM people WHERE department = :dept"
  - id: t2
    description: d
    parameters: [{name: unused, type: integer, default: 1}]
    sql: "SELECT name FROM people"
"""
    config = make_tree(tmp_path, adapters={"people.yaml": PEOPLE_ADAPTER}, libraries={"people/p.yaml": library})
    assert issues_of(config) == [
        "templates/people/p.yaml:4: templates[0].sql: placeholders not declared as parameters: ['dept']",
        "templates/people/p.yaml:7: templates[1].parameters: parameters not used in the sql body: ['unused']",
    ]


def test_template_unknown_key_and_bad_parameter_type(tmp_path):
    library = """
templates:
  - id: t1
    description: d
    nl_exmaples: ["typo"]
    parameters: [{name: n, type: integr}]
    sql: "SELECT name FROM people WHERE id = :n"
"""
    config = make_tree(tmp_path, adapters={"people.yaml": PEOPLE_ADAPTER}, libraries={"people/p.yaml": library})
    issues = issues_of(config)
    assert "templates/people/p.yaml:4: templates[0].nl_exmaples: unknown key" in issues
    assert any(i.startswith("templates/people/p.yaml:5: templates[0].parameters[0].type:") for i in issues)


@pytest.mark.parametrize(
    "sql, fragment",
    [
        ("DROP TABLE people", "read-only query"),
        ("SELECT 1; DELETE FROM people", "exactly one statement"),
        ("INSERT INTO people (name) VALUES ('x')", "read-only query"),
        ("UPDATE people SET salary = 0", "read-only query"),
        ("WITH d AS (DELETE FROM people RETURNING *) SELECT * FROM d", "read-only"),
        ("SELECT * FROM people WHERE id = ?", "named binds"),
    ],
)
def test_sql_guard_refuses_writes_at_load(tmp_path, sql, fragment):
    library = f"""
templates:
  - id: bad
    description: d
    sql: "{sql}"
"""
    config = make_tree(tmp_path, adapters={"people.yaml": PEOPLE_ADAPTER}, libraries={"people/p.yaml": library})
    [issue] = issues_of(config)
    assert issue.startswith("templates/people/p.yaml:4: templates[0].sql: ")
    assert fragment in issue


def test_composite_unknown_child_and_misspelt_tie_breaker(tmp_path):
    composite = """
adapters:
  - name: all
    type: composite
    child_adapters: [people, nobody]
    scoring: {tie_breaker: reranker}
"""
    config = make_tree(
        tmp_path,
        adapters={"people.yaml": PEOPLE_ADAPTER, "all.yaml": composite},
        libraries={"people/p.yaml": PEOPLE_LIBRARY},
    )
    # the override blocks are typed: a bad value is reported where it stands, with the allowed values
    [tie] = issues_of(config)
    assert tie.startswith("config/adapters/all.yaml:5: adapters[0].scoring.tie_breaker:")
    assert "'embedding', 'rerank' or 'string_similarity'" in tie
    (config / "adapters" / "all.yaml").write_text(composite.replace("reranker", "rerank").lstrip())
    assert issues_of(config) == [
        "config/adapters/all.yaml:4: adapters[0].child_adapters: unknown child adapter 'nobody'"
    ]


def test_a_model_path_that_is_no_model_folder_names_file_line_and_key(tmp_path):
    config = make_tree(tmp_path, "embedding:\n  provider: minilm\n  model_path: data/no-such-model\n")
    [issue] = issues_of(config)
    assert issue.startswith("config/config.yaml:3: embedding.model_path: embedding model folder ")
    assert issue.endswith("no-such-model does not exist")
    (tmp_path / "data" / "no-such-model").mkdir(parents=True)
    [issue] = issues_of(config)
    assert issue.endswith("lacks model.safetensors, tokenizer.json, config.json")


def test_an_adapters_own_model_path_is_checked_too(tmp_path):
    adapter = PEOPLE_ADAPTER.replace(
        "    confidence_threshold: 0.3\n", "    confidence_threshold: 0.3\n    embedding: {model_path: models/mine}\n"
    )
    config = make_tree(tmp_path, adapters={"people.yaml": adapter}, libraries={"people/p.yaml": PEOPLE_LIBRARY})
    [issue] = issues_of(config)
    assert issue.startswith("config/adapters/people.yaml:7: adapters[0].embedding.model_path: embedding model folder")


def test_an_unclosed_bracket_names_the_line_it_opens_on():
    """PyYAML finds an unclosed '[' only at the next key: the message also names the line it was opened on."""
    text = "templates:\n  - id: a\n    description: x\n    tags: [employees, list\n    sql: SELECT 1\n"
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text, "t.yaml")
    [issue] = caught.value.issues
    assert issue.line == 5 and "a flow sequence that starts at line 4" in issue.message


def test_a_blank_description_is_a_load_error(tmp_path):
    library = PEOPLE_LIBRARY.replace("description: Look up one person by name", 'description: "   "')
    assert library != PEOPLE_LIBRARY
    config = make_tree(tmp_path, BASE_CONFIG, {"people.yaml": PEOPLE_ADAPTER}, {"people/people.yaml": library})
    [issue] = issues_of(config)
    assert "description must not be blank" in issue and "templates[2].description" in issue
