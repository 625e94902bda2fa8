"""Placeholders that a document store reads as a pattern (MongoDB $regex, Elasticsearch wildcard/regexp)
are refused at load with file:line unless the parameter declares `pattern_allowed: true`."""

from __future__ import annotations

import pytest

from server.config.errors import ConfigError
from server.runtime.loader import load_config
from server.testing.configs import BASE_CONFIG, make_tree

MONGO = """
adapters:
  - name: cars
    type: mongodb
    connection: {url: "mongodb://127.0.0.1:1/?directConnection=true", database: examples}
    templates: ["templates/cars/*.yaml"]
"""
ES = """
adapters:
  - name: cars
    type: elasticsearch
    connection: {url: "http://127.0.0.1:1"}
    templates: ["templates/cars/*.yaml"]
"""
CASES = [
    (MONGO, "mongodb: {collection: cars, filter: {model: {$regex: {$param: q}}}}"),
    (MONGO, 'mongodb: {collection: cars, filter: {model: {$regex: "{{q}}", $options: i}}}'),
    (
        MONGO,
        "mongodb: {collection: cars, operation: aggregate, pipeline: "
        "[{$match: {$expr: {$regexMatch: {input: $model, regex: {$param: q}}}}}]}",
    ),
    (ES, 'elasticsearch: {index: cars, body: {query: {wildcard: {model: {value: "{{q}}"}}}}}'),
    (ES, 'elasticsearch: {index: cars, body: {query: {regexp: {model: "{{q}}"}}}}'),
]


def tree(tmp_path, adapter: str, body: str, flag: str = ""):
    lib = (
        "templates:\n  - id: t\n    description: d\n"
        f"    parameters: [{{name: q, type: string, required: true{flag}}}]\n"
        f"    {body}\n"
    )
    return make_tree(tmp_path, BASE_CONFIG, {"cars.yaml": adapter}, {"cars/c.yaml": lib})


@pytest.mark.parametrize(("adapter", "body"), CASES)
def test_pattern_placeholders_need_pattern_allowed(tmp_path, adapter, body):
    with pytest.raises(ConfigError) as info:
        load_config(tree(tmp_path, adapter, body))
    [issue] = info.value.issues
    assert (issue.file, issue.line) == ("templates/cars/c.yaml", 2)
    assert "pattern_allowed: true" in issue.message
    assert load_config(tree(tmp_path, adapter, body, ", pattern_allowed: true")).templates["cars"][0].id == "t"


@pytest.mark.parametrize(
    ("adapter", "body"),
    [
        (MONGO, "mongodb: {collection: cars, filter: {model: {$param: q}}}"),
        (
            MONGO,
            "mongodb: {collection: cars, operation: aggregate, pipeline: "
            '[{$match: {$expr: {$regexMatch: {input: {$param: q}, regex: "^A"}}}}]}',
        ),
        (ES, 'elasticsearch: {index: cars, body: {query: {match: {model: "{{q}}"}}}}'),
    ],
)
def test_literal_placeholders_stay_accepted(tmp_path, adapter, body):
    assert load_config(tree(tmp_path, adapter, body)).templates["cars"][0].id == "t"
