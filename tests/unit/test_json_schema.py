"""Template parameters as JSON Schema: every constraint validation enforces is in the schema, and the
schema itself is valid JSON Schema that accepts the values validation accepts."""

from __future__ import annotations

import jsonschema

from server.params.llm_protocol import build_tool
from server.templates import ParameterSpec, Template
from server.templates.json_schema import parameter_schema, template_schema

SPECS = [
    ParameterSpec(name="department", required=True, allowed_values=["Engineering", "Sales"], description="Dept"),
    ParameterSpec(name="limit", type="integer", default=50, min=1, max=500),
    ParameterSpec(name="ratio", type="number", min=0.5),
    ParameterSpec(name="code", pattern=r"^[A-Z]{3}$"),
    ParameterSpec(name="since", type="date"),
    ParameterSpec(name="at", type="datetime"),
    ParameterSpec(name="active", type="boolean", default=True),
    ParameterSpec(name="tier", type="enum", allowed_values=["gold", "silver"]),
    ParameterSpec(name="regions", type="array", item_type="string", allowed_values=["EU", "US"]),
]
TEMPLATE = Template(id="t", description="d", parameters=SPECS, body_key="sql", body="SELECT 1")


def test_every_constraint_is_in_the_schema():
    schema = template_schema(TEMPLATE)
    props = schema["properties"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["department"]
    assert props["department"] == {"type": "string", "enum": ["Engineering", "Sales"], "description": "Dept"}
    assert props["limit"] == {"type": "integer", "minimum": 1, "maximum": 500, "default": 50}
    assert props["ratio"] == {"type": "number", "minimum": 0.5}
    assert props["code"] == {"type": "string", "pattern": "^[A-Z]{3}$"}
    assert props["since"] == {"type": "string", "format": "date"}
    assert props["at"] == {"type": "string", "format": "date-time"}
    assert props["active"] == {"type": "boolean", "default": True}
    assert props["tier"] == {"type": "string", "enum": ["gold", "silver"]}
    assert props["regions"] == {"type": "array", "items": {"type": "string", "enum": ["EU", "US"]}}


def test_schema_is_valid_and_agrees_with_validation():
    schema = template_schema(TEMPLATE)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"department": "Sales", "limit": 10, "code": "ABC", "regions": ["EU"]})
    assert not validator.is_valid({"limit": 10})  # department is required
    assert not validator.is_valid({"department": "Legal"})
    assert not validator.is_valid({"department": "Sales", "limit": 501})
    assert not validator.is_valid({"department": "Sales", "code": "abcd"})
    assert not validator.is_valid({"department": "Sales", "unknown": 1})


def test_llm_tool_uses_the_same_schema_without_required_or_defaults():
    tool = build_tool(SPECS)["input_schema"]
    assert "required" not in tool
    assert "default" not in tool["properties"]["limit"]
    assert tool["properties"]["limit"] == {"type": "integer", "minimum": 1, "maximum": 500}
    assert tool["properties"]["department"] == parameter_schema(SPECS[0])
    narrowed = build_tool(SPECS, {"department": ["Sales"]})["input_schema"]["properties"]["department"]
    assert narrowed["enum"] == ["Sales"]


def test_a_time_parameter_is_a_24_hour_hh_mm_string():
    spec = ParameterSpec(name="slot", type="time", description="Start time")
    schema = parameter_schema(spec)
    assert schema == {"type": "string", "pattern": r"^(?:[01]\d|2[0-3]):[0-5]\d$", "description": "Start time"}
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid("15:30") and validator.is_valid("00:00")
    assert not validator.is_valid("24:00") and not validator.is_valid("3 pm") and not validator.is_valid("15:30:00")
    array = parameter_schema(ParameterSpec(name="slots", type="array", item_type="time"))
    assert array["items"]["pattern"] == schema["pattern"]


def test_the_catalogue_shows_how_a_closed_list_is_matched_where_it_is_set():
    listed = {"query": "SELECT name FROM cities"}
    specs = [
        ParameterSpec(name="city", values_from=listed, match="exact", partial=False),
        ParameterSpec(name="team", allowed_values=["Red", "Blue"], match="fuzzy"),
        ParameterSpec(name="store", values_from=listed),
    ]
    template = Template(id="t", description="d", parameters=specs, body_key="sql", body="SELECT 1")
    schema = template_schema(template)
    jsonschema.Draft202012Validator.check_schema(schema)
    props = schema["properties"]
    assert props["city"] == {"type": "string", "x-match": "exact", "x-partial": False}
    assert props["team"] == {"type": "string", "enum": ["Red", "Blue"], "x-match": "fuzzy"}
    assert props["store"] == {"type": "string"}
    assert "x-match" not in build_tool(specs)["input_schema"]["properties"]["city"]
