"""Annotated examples: `[text](parameter)` markup is parsed, stripped and checked at load with file:line."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from server.config.errors import ConfigError
from server.params.spans import check_annotation
from server.runtime.loader import load_config
from server.templates import ParameterSpec, Template
from server.templates.annotations import AnnotationError, parse_example


def test_marks_are_stripped_and_their_spans_point_into_the_plain_text():
    got = parse_example("flights from [boston](from_city) to [ new york ](to_city) on [friday](day)")
    assert got.text == "flights from boston to  new york  on friday"
    assert [(got.value_of(s), s.parameter) for s in got.spans] == [
        ("boston", "from_city"),
        ("new york", "to_city"),
        ("friday", "day"),
    ]


def test_an_entry_without_markup_keeps_its_brackets():
    assert parse_example("what is [beta] about?").text == "what is [beta] about?"
    assert parse_example("what is [beta] about?").spans == ()


@pytest.mark.parametrize(
    "raw, problem",
    [
        ("from [boston(from_city) to x", r"unbalanced '\['"),
        ("[boston]](x)", "unbalanced"),
        ("[boston] (from_city)", "unbalanced"),
        ("a [](x)", "empty"),
        ("[a](b c)", "not a parameter name"),
    ],
)
def test_broken_markup_is_an_error(raw, problem):
    with pytest.raises(AnnotationError, match=problem):
        parse_example(raw)


def _template(examples: list[str]) -> Template:
    return Template(
        id="flights",
        description="find flights",
        nl_examples=examples,
        parameters=[ParameterSpec(name="from_city"), ParameterSpec(name="day", type="date")],
        body_key="sql",
        body="SELECT 1",
    )


def test_the_template_embeds_plain_text_and_keeps_the_marks_aside():
    t = _template(["flights from [boston](from_city)", "any flights on [monday](day)?", "cheap flights"])
    assert t.nl_examples == ["flights from boston", "any flights on monday?", "cheap flights"]
    assert t.embedding_texts() == ["find flights", *t.nl_examples]
    assert "example_spans" not in t.model_dump()
    assert [a.text for a in t.annotated_examples()] == ["flights from boston", "any flights on monday?"]
    # a changed mark is a changed template (the learned extractor is refitted), the embedded text is not
    moved = _template(["flights from [boston](day)", "any flights on [monday](day)?", "cheap flights"])
    assert moved != t and moved.content_hash() == t.content_hash()


def test_a_broken_entry_is_named_by_its_index():
    with pytest.raises(ValidationError) as caught:
        _template(["fine", "from [boston(from_city)"])
    assert caught.value.errors()[0]["loc"] == ("nl_examples", 1)


def _tree(tmp_path: Path, examples: list[str]) -> Path:
    (tmp_path / "config" / "adapters").mkdir(parents=True)
    (tmp_path / "templates").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("stats: {enabled: false}\n")
    (tmp_path / "config" / "adapters" / "a.yaml").write_text(
        "adapters:\n  - name: f\n    type: sql\n    connection: {url: 'sqlite:///:memory:'}\n"
        "    templates: ['templates/*.yaml']\n"
    )
    lines = "".join(f"      - {e!r}\n" for e in examples)
    (tmp_path / "templates" / "t.yaml").write_text(
        "templates:\n  - id: flights\n    description: find flights\n    nl_examples:\n"
        + lines
        + "    parameters:\n      - {name: from_city}\n      - {name: seats, type: integer, max: 9}\n"
        "      - {name: day, type: date}\n"
        "    sql: 'SELECT :from_city, :seats, :day'\n"
    )
    return tmp_path / "config"


def test_load_errors_name_file_line_and_entry(tmp_path):
    config = _tree(
        tmp_path,
        [
            "flights from [boston](from_city)",  # line 5: fine
            "flights from [boston](fro_city)",  # line 6: no such parameter
            "flights on [boston](day)",  # line 7: not a date
            "[twelve](seats) seats",  # line 8: above max
            "[four](seats) seats on [april sixth](day)",  # line 9: fine (number and date words)
        ],
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    found = {(i.file, i.line, i.key): i.message for i in caught.value.issues}
    assert set(found) == {
        ("templates/t.yaml", 6, "templates[0].nl_examples[1]"),
        ("templates/t.yaml", 7, "templates[0].nl_examples[2]"),
        ("templates/t.yaml", 8, "templates[0].nl_examples[3]"),
    }
    assert "no parameter 'fro_city'" in found[("templates/t.yaml", 6, "templates[0].nl_examples[1]")]
    assert "'boston' is not a date" in found[("templates/t.yaml", 7, "templates[0].nl_examples[2]")]
    assert "at most 9" in found[("templates/t.yaml", 8, "templates[0].nl_examples[3]")]


def test_a_syntax_error_is_reported_at_its_line(tmp_path):
    config = _tree(tmp_path, ["fine", "flights from [boston(from_city)"])
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    (issue,) = caught.value.issues
    assert (issue.file, issue.line, issue.key) == ("templates/t.yaml", 6, "templates[0].nl_examples[1]")
    assert "unbalanced '['" in issue.message


@pytest.mark.parametrize(
    "kind, text",
    [
        ("date", "this weekend"),
        ("date", "fifteenth"),
        ("time", "tonight"),
        ("time", "early morning"),
        ("time", "1700"),
        ("integer", "one"),
    ],
)
def test_a_mark_plainly_of_its_type_loads_even_without_one_exact_value(kind, text):
    assert check_annotation(ParameterSpec(name="p", type=kind), text) is None


@pytest.mark.parametrize("kind, text", [("date", "boston"), ("time", "boston"), ("integer", "many")])
def test_a_mark_of_another_type_is_refused(kind, text):
    assert "is not" in (check_annotation(ParameterSpec(name="p", type=kind), text) or "")
