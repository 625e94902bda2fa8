"""YAML input is bounded while parsing: alias bombs, deep nesting, huge and non-UTF-8 files are config errors.

Every file (config.yaml, adapter files, template libraries) is read through the same path; each case is
checked through the file kind an operator would most likely drop it in.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from server.config.errors import ConfigError
from server.config.yaml_bounds import ALIAS_EXPANSION_FLOOR, MAX_FILE_BYTES
from server.config.yaml_source import parse_yaml
from server.runtime.loader import load_config
from server.templates.library import load_library
from server.testing.configs import PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_tree


def alias_bomb(levels: int, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def issues_of(config_dir) -> list:
    with pytest.raises(ConfigError) as info:
        load_config(config_dir)
    return info.value.issues


def test_alias_bomb_in_a_template_library_is_rejected_with_file_and_line_in_bounded_memory(tmp_path):
    bomb = PEOPLE_LIBRARY + "x-bomb:\n" + "".join(f"  {line}\n" for line in alias_bomb(5).splitlines())
    config = make_tree(tmp_path, adapters={"people.yaml": PEOPLE_ADAPTER}, libraries={"people/p.yaml": PEOPLE_LIBRARY})
    (tmp_path / "templates/people/bomb.yaml").write_text(bomb)
    tracemalloc.start()
    try:
        issues = issues_of(config)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [issue] = [i for i in issues if i.file.endswith("bomb.yaml")]
    assert issue.file == "templates/people/bomb.yaml"
    assert issue.line == PEOPLE_LIBRARY.count("\n") + 1 + 5  # the alias that pushes expansion over
    assert "alias" in issue.message
    assert peak < 30 * 2**20


@pytest.mark.parametrize("levels", [5, 7, 12])
def test_alias_bombs_of_any_size_are_rejected_in_milliseconds(levels):
    text = alias_bomb(levels)
    assert len(text) < 800
    started = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "config/adapters/bomb.yaml")
    # refused before expanding: 12 levels would be 9^11 values (hours), so even a loaded machine's seconds tell
    assert time.perf_counter() - started < 5.0
    [issue] = info.value.issues
    assert (issue.file, issue.line) == ("config/adapters/bomb.yaml", 5)


def test_alias_bomb_in_an_adapter_file(tmp_path):
    config = make_tree(tmp_path, adapters={"bomb.yaml": "adapters: []\n" + alias_bomb(5)})
    [issue] = issues_of(config)
    assert (issue.file, issue.line) == ("config/adapters/bomb.yaml", 6)


def test_ordinary_anchor_reuse_is_accepted():
    """Shared parameter blocks reused by many templates are normal YAML and stay accepted."""
    head = "common: &params\n  - {name: department, type: string, required: true}\n  - {name: limit, type: integer}\n"
    body = "".join(f"t{i}: {{id: t{i}, parameters: *params}}\n" for i in range(400))
    doc = parse_yaml(head + body, "lib.yaml")
    assert doc.data["t399"]["parameters"][1]["name"] == "limit"
    assert doc.line_of(("t399", "parameters")) == 403


def test_expansion_past_the_floor_is_accepted_while_it_stays_within_the_written_size():
    block = "[" + ", ".join(str(i) for i in range(ALIAS_EXPANSION_FLOOR // 10)) + "]"
    aliases = "".join(f"u{i}: *b\n" for i in range(12))  # 12 x 1,001 values through aliases
    filler = "".join(f"f{i}: [{i}, {i}]\n" for i in range(5000))  # 15,000 written values
    doc = parse_yaml(f"b: &b {block}\n{aliases}{filler}", "big.yaml")
    assert len(doc.data["u11"]) == ALIAS_EXPANSION_FLOOR // 10


@pytest.mark.parametrize("opening", ["[", "- ", "{a: "])
def test_deep_nesting_is_rejected_with_the_line(opening):
    text = opening * 5000
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "deep.yaml")
    [issue] = info.value.issues
    assert (issue.file, issue.line) == ("deep.yaml", 1)
    assert "nesting" in issue.message


def test_deep_block_nesting_names_the_line_where_it_goes_too_deep():
    text = "".join("  " * i + "k:\n" for i in range(300)) + "  " * 300 + "v\n"
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "deep.yaml")
    assert info.value.issues[0].line == 101  # the mapping opened on line n is level n


def test_invalid_utf8_library_is_reported_with_its_name_and_line(tmp_path):
    config = make_tree(tmp_path, adapters={"people.yaml": PEOPLE_ADAPTER}, libraries={"people/p.yaml": PEOPLE_LIBRARY})
    (tmp_path / "templates/people/latin1.yaml").write_bytes(b"templates:\n  - id: caf\xe9\n")
    [issue] = issues_of(config)
    assert (issue.file, issue.line) == ("templates/people/latin1.yaml", 2)
    assert "UTF-8" in issue.message and "0xe9" in issue.message


def test_invalid_utf8_adapter_file_is_reported_with_its_name(tmp_path):
    config = make_tree(tmp_path)
    (config / "adapters" / "bad.yaml").write_bytes(b"\xff\xfeadapters: []\n")
    [issue] = issues_of(config)
    assert (issue.file, issue.line) == ("config/adapters/bad.yaml", 1)


def test_invalid_utf8_through_load_library(tmp_path):
    (tmp_path / "lib.yaml").write_bytes(b"templates: []\n# \xc3\x28\n")
    with pytest.raises(ConfigError) as info:
        load_library(["lib.yaml"], tmp_path, "sql", lambda body: body, "people")
    [issue] = info.value.issues
    assert (issue.file, issue.line) == ("lib.yaml", 2)


def test_oversized_file_is_rejected_without_reading_it(tmp_path):
    config = make_tree(tmp_path, adapters={"people.yaml": PEOPLE_ADAPTER}, libraries={"people/p.yaml": PEOPLE_LIBRARY})
    huge = tmp_path / "templates/people/huge.yaml"
    with huge.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk
    [issue] = issues_of(config)
    assert issue.file == "templates/people/huge.yaml"
    assert "larger than 16 MiB" in issue.message


def test_labelled_questions_file_has_the_same_bounds(tmp_path):
    from server.cli.fit import read_labelled

    path = tmp_path / "labelled.yaml"
    path.write_text(alias_bomb(6))
    with pytest.raises(ValueError, match=r"labelled.yaml:5: aliases expand"):
        read_labelled(path)
