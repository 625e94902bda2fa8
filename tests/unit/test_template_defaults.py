"""A parameter's default must fit its own parameter (type, allowed_values, min/max, pattern): a template
whose default does not is a load error at the default's line, not a question every user who leaves the
value out is asked about a value they never gave."""

from __future__ import annotations

import pytest

from server.config.errors import ConfigError
from server.runtime.loader import load_config
from server.testing.configs import make_tree

ADAPTER = """
adapters:
  - name: people
    type: sql
    connection: {url: "sqlite:///people.db"}
    templates: ["templates/t.yaml"]
"""
PARAMETERS = """
templates:
  - id: people
    description: people of a department
    nl_examples: ["who works in Sales"]
    parameters:
      - {name: department, allowed_values: [Engineering, Sales], default: Legal}
      - {name: limit, type: integer, min: 1, max: 500, default: abc}
      - {name: top, type: integer, min: 1, max: 500, default: 5000}
      - {name: code, pattern: "[A-Z]{3}", default: "x1"}
      - {name: since, type: date, default: "2024-02-30"}
      - {name: fine, type: integer, min: 1, max: 500, default: 50}
      - {name: cased, allowed_values: [Engineering, Sales], default: sales}
    sql: "SELECT :department, :limit, :top, :code, :since, :fine, :cased"
"""


def test_a_default_that_does_not_fit_its_parameter_is_a_load_error_at_its_line(tmp_path):
    config = make_tree(tmp_path, adapters={"people.yaml": ADAPTER}, libraries={"t.yaml": PARAMETERS})
    (tmp_path / "people.db").touch()
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    found = {(i.file, i.line, i.key): i.message for i in caught.value.issues}
    assert set(found) == {("templates/t.yaml", 6 + n, f"templates[0].parameters[{n}].default") for n in range(5)}
    assert "must be one of" in found[("templates/t.yaml", 6, "templates[0].parameters[0].default")]
    assert "'Legal'" in found[("templates/t.yaml", 6, "templates[0].parameters[0].default")]
    assert "at most 500" in found[("templates/t.yaml", 8, "templates[0].parameters[2].default")]
