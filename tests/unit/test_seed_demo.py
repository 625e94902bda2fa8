"""The demo seeder and the demo template libraries: every template must run against the data it ships with.

Templates are read with plain PyYAML on purpose: this checks the demo content on its own terms,
independently of the project's template loader.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from server.testing.demo import load_seeder

REPO = Path(__file__).resolve().parents[2]
ADAPTER_DIRS = {"hr": REPO / "templates" / "hr", "sales": REPO / "templates" / "sales"}
QUESTIONS_FILE = REPO / "tests" / "data" / "demo_questions.yaml"

TEMPLATE_KEYS = {"id", "description", "nl_examples", "parameters", "sql", "result_format", "tags", "counts"}
PARAM_KEYS = {
    "name",
    "type",
    "description",
    "required",
    "default",
    "allowed_values",
    "min",
    "max",
    "pattern",
    "aliases",
    "values_from",
}
PARAM_TYPES = {"string", "integer", "number", "boolean", "date", "datetime", "enum", "array"}
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
PLACEHOLDER = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
WRITE_WORDS = re.compile(
    r"\b(insert|update|delete|drop|create|alter|attach|detach|pragma|copy|install|load|"
    r"replace|truncate|vacuum|export|import|call|set)\b",
    re.IGNORECASE,
)

# Values for required parameters without a default, chosen to hit rows in the seeded data.
SAMPLES: dict[str, Any] = {
    "name": "Priya Raman",
    "manager_name": "Priya Raman",
    "customer_name": "Orion",
    "product": "Office Chair",
    "start_date": date(2024, 1, 1),
    "end_date": date(2024, 1, 31),
    "since_date": date(2025, 6, 1),
    "on_date": date(2025, 7, 1),
    "min_salary": 150000,
    "max_price": 500,
    "order_id": 1,
    "year": 2024,
}


seed_demo = load_seeder()


def _templates(adapter: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted(ADAPTER_DIRS[adapter].glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert set(doc) == {"templates"}, f"{path.name}: only a 'templates:' list is allowed"
        found.extend(doc["templates"])
    return found


TEMPLATES = {adapter: _templates(adapter) for adapter in ADAPTER_DIRS}
ALL = [(adapter, t) for adapter, items in TEMPLATES.items() for t in items]
IDS = [f"{adapter}:{t['id']}" for adapter, t in ALL]


def _strip_literals(sql: str) -> str:
    return re.sub(r"'(?:[^']|'')*'", "''", sql)


def placeholders(sql: str) -> set[str]:
    return set(PLACEHOLDER.findall(_strip_literals(sql)))


def sample_params(template: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for param in template.get("parameters", []):
        name = param["name"]
        if param.get("default") is not None:
            values[name] = param["default"]
        elif param.get("allowed_values"):
            values[name] = param["allowed_values"][0]
        else:
            assert name in SAMPLES, f"no sample value for required parameter {name!r}"
            values[name] = SAMPLES[name]
        if param["type"] == "date" and isinstance(values[name], str):
            values[name] = date.fromisoformat(values[name])
    return values


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seeded")
    results = seed_demo.seed(root)
    assert all(r.built for r in results)
    return root


def run(root: Path, adapter: str, sql: str, params: dict[str, Any]) -> tuple[list[str], list[tuple]]:
    """Execute as the adapters will: named binds, dates as ISO text for SQLite and as dates for DuckDB."""
    if adapter == "hr":
        binds = {k: v.isoformat() if isinstance(v, date) else v for k, v in params.items()}
        with contextlib.closing(sqlite3.connect(f"file:{root / seed_demo.HR_DB}?mode=ro", uri=True)) as con:
            cursor = con.execute(sql, binds)
            return [d[0] for d in cursor.description], cursor.fetchall()
    con = duckdb.connect(str(root / seed_demo.SALES_DB), read_only=True)
    try:
        cursor = con.execute(PLACEHOLDER.sub(r"$\1", sql), params)
        return [d[0] for d in cursor.description], cursor.fetchall()
    finally:
        con.close()


# --------------------------------------------------------------------------- template libraries


def test_each_data_set_has_at_least_15_templates() -> None:
    assert {adapter: len(items) >= 15 for adapter, items in TEMPLATES.items()} == {"hr": True, "sales": True}


@pytest.mark.parametrize("adapter", sorted(TEMPLATES))
def test_template_ids_are_unique_snake_case(adapter: str) -> None:
    ids = [t["id"] for t in TEMPLATES[adapter]]
    assert len(ids) == len(set(ids))
    assert all(SNAKE.match(i) for i in ids)


@pytest.mark.parametrize("adapter", sorted(TEMPLATES))
def test_some_template_has_a_required_parameter_without_default(adapter: str) -> None:
    assert any(p.get("required") and "default" not in p for t in TEMPLATES[adapter] for p in t.get("parameters", []))


@pytest.mark.parametrize(("adapter", "template"), ALL, ids=IDS)
def test_template_shape(adapter: str, template: dict[str, Any]) -> None:
    assert set(template) <= TEMPLATE_KEYS
    assert {"id", "description", "nl_examples", "sql"} <= set(template)
    assert template.get("result_format", "table") in {"table", "summary"}
    examples = template["nl_examples"]
    assert 5 <= len(examples) <= 8 and len({e.casefold() for e in examples}) == len(examples)
    for param in template.get("parameters", []):
        assert set(param) <= PARAM_KEYS and param["type"] in PARAM_TYPES
        assert not (param.get("required") and "default" in param), param["name"]
        allowed = param.get("allowed_values")
        if param["type"] == "enum":
            assert allowed
        if allowed:
            folded = {str(v).casefold() for v in allowed}
            assert all(str(v).casefold() in folded for v in param.get("aliases", {}).values())
            if "default" in param:
                assert param["default"] in allowed
        if "default" in param and isinstance(param["default"], int | float):
            assert param.get("min", float("-inf")) <= param["default"] <= param.get("max", float("inf"))


@pytest.mark.parametrize(("adapter", "template"), ALL, ids=IDS)
def test_placeholders_match_declared_parameters(adapter: str, template: dict[str, Any]) -> None:
    declared = {p["name"] for p in template.get("parameters", [])}
    assert placeholders(template["sql"]) == declared


@pytest.mark.parametrize(("adapter", "template"), ALL, ids=IDS)
def test_sql_is_one_read_only_select(adapter: str, template: dict[str, Any]) -> None:
    sql = _strip_literals(template["sql"]).strip()
    assert re.match(r"(?is)^(select|with)\b", sql)
    assert ";" not in sql
    assert not WRITE_WORDS.search(sql)


@pytest.mark.parametrize(("adapter", "template"), ALL, ids=IDS)
def test_template_sql_runs_on_seeded_data(built: Path, adapter: str, template: dict[str, Any]) -> None:
    columns, rows = run(built, adapter, template["sql"], sample_params(template))
    assert rows, "sample parameters should hit data"
    assert len(columns) == len(set(columns)) and all(SNAKE.match(c) for c in columns), columns
    if template.get("result_format") == "summary":
        assert len(rows) == 1
    limit = sample_params(template).get("limit")
    if limit is not None:
        assert len(rows) <= limit


def test_employee_count_template_counts_active_staff(built: Path) -> None:
    template = next(t for t in TEMPLATES["hr"] if t["id"] == "employee_count_by_department")
    assert "How many employees are in Engineering?" in template["nl_examples"]
    columns, rows = run(built, "hr", template["sql"], {"department": "Engineering"})
    with contextlib.closing(sqlite3.connect(built / seed_demo.HR_DB)) as con:
        (expected,) = con.execute(
            "SELECT COUNT(*) FROM employees WHERE department = 'Engineering' AND status = 'active'"
        ).fetchone()
    assert columns == ["department", "employee_count"] and rows == [("Engineering", expected)]
    assert 50 < expected < 100


# --------------------------------------------------------------------------- count templates

# lists of the rows that match a filter: each has a count template (`counts:`), so that "how many ..." is
# answered by a number and not by the list's first page (rankings, lookups and breakdowns have none)
FILTERED_LISTS = {
    "hr": {
        "employees_by_department",
        "employees_hired_in_period",
        "employees_by_city",
        "former_employees",
        "employees_earning_above",
        "direct_reports",
        "leave_requests_by_status",
        "employees_on_leave_on_date",
    },
    "sales": {
        "customers_by_segment",
        "customers_by_country",
        "inactive_customers",
        "orders_between_dates",
        "orders_by_status",
        "products_by_category",
        "products_in_price_range",
    },
}
PAIRS = [
    (adapter, t, next(listed for listed in items if listed["id"] == t["counts"]))
    for adapter, items in TEMPLATES.items()
    for t in items
    if "counts" in t
]


def test_every_filtered_list_has_a_count_template() -> None:
    counted = {adapter: {listed["id"] for a, _c, listed in PAIRS if a == adapter} for adapter in TEMPLATES}
    assert counted == FILTERED_LISTS


@pytest.mark.parametrize(("adapter", "count", "listed"), PAIRS, ids=[c["id"] for _a, c, _l in PAIRS])
def test_a_count_template_counts_the_rows_of_its_list(built: Path, adapter: str, count: dict, listed: dict) -> None:
    """Same filters: the count's first number is the number of rows the list returns without its LIMIT."""
    assert count["result_format"] == "summary"
    own = {p["name"] for p in count.get("parameters", [])}
    assert own == {p["name"] for p in listed.get("parameters", [])} - {"limit"}
    params = sample_params(count)
    _columns, counted = run(built, adapter, count["sql"], params)
    list_params = {**sample_params(listed), **params}
    if "limit" in list_params:
        list_params["limit"] = 1_000_000
    _columns, rows = run(built, adapter, listed["sql"], list_params)
    assert len(counted) == 1
    assert next(v for v in counted[0] if isinstance(v, int)) == len(rows) > 0


# --------------------------------------------------------------------------- seeded data


def _checksums(root: Path) -> dict[str, tuple[int, str]]:
    sums: dict[str, tuple[int, str]] = {}

    def digest(rows: list[tuple]) -> str:
        return hashlib.sha256(repr(rows).encode()).hexdigest()

    with contextlib.closing(sqlite3.connect(root / seed_demo.HR_DB)) as con:
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            rows = con.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            sums[f"hr.{table}"] = (len(rows), digest(rows))
    con2 = duckdb.connect(str(root / seed_demo.SALES_DB), read_only=True)
    try:
        for (table,) in con2.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
            rows = con2.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            sums[f"sales.{table}"] = (len(rows), digest(rows))
    finally:
        con2.close()
    return sums


def test_builds_are_deterministic(built: Path, tmp_path: Path) -> None:
    seed_demo.seed(tmp_path)
    first, second = _checksums(built), _checksums(tmp_path)
    assert first == second
    assert set(first) == {
        "hr.departments",
        "hr.employees",
        "hr.performance_reviews",
        "hr.leave_requests",
        "sales.customers",
        "sales.products",
        "sales.orders",
        "sales.order_items",
    }


def test_sizes_match_the_brief(built: Path) -> None:
    sums = _checksums(built)
    assert sums["hr.departments"][0] == 7
    assert 280 <= sums["hr.employees"][0] <= 320
    assert sums["sales.customers"][0] == 500 and sums["sales.products"][0] == 40
    assert 4500 <= sums["sales.orders"][0] <= 5500


def test_data_is_plausible(built: Path) -> None:
    with contextlib.closing(sqlite3.connect(built / seed_demo.HR_DB)) as con:
        assert con.execute("SELECT MIN(hire_date), MAX(hire_date) FROM employees").fetchone() >= ("2015", "")
        assert con.execute("SELECT MAX(hire_date) < '2026' FROM employees").fetchone() == (1,)
        assert con.execute("SELECT COUNT(DISTINCT department) FROM employees").fetchone() == (7,)
        # a manager always exists and sits in the same department or is the department head's boss
        assert con.execute(
            "SELECT COUNT(*) FROM employees e LEFT JOIN employees m ON m.id = e.manager_id "
            "WHERE e.manager_id IS NOT NULL AND m.id IS NULL"
        ).fetchone() == (0,)
        assert con.execute("SELECT COUNT(*) FROM leave_requests WHERE end_date < start_date").fetchone() == (0,)
        # a senior title out-earns the junior one on average
        avg = dict(con.execute("SELECT title, AVG(salary) FROM employees GROUP BY title").fetchall())
        assert avg["Senior Software Engineer"] > avg["Software Engineer"] > avg["Support Specialist"]
    con2 = duckdb.connect(str(built / seed_demo.SALES_DB), read_only=True)
    try:
        assert con2.execute("SELECT COUNT(DISTINCT category) FROM products").fetchone() == (6,)
        assert con2.execute("SELECT MIN(year(order_date)), MAX(year(order_date)) FROM orders").fetchone() == (
            2023,
            2025,
        )
        assert con2.execute(
            "SELECT COUNT(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.order_date < c.signup_date"
        ).fetchone() == (0,)
        assert con2.execute(
            "SELECT COUNT(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM order_items i WHERE i.order_id = o.id)"
        ).fetchone() == (0,)
    finally:
        con2.close()


def test_second_run_skips_and_force_rebuilds(built: Path) -> None:
    before = (built / seed_demo.HR_DB).stat().st_mtime_ns
    assert [r.built for r in seed_demo.seed(built)] == [False, False]
    assert (built / seed_demo.HR_DB).stat().st_mtime_ns == before
    assert [r.built for r in seed_demo.seed(built, force=True)] == [True, True]


def test_stale_output_is_rebuilt(tmp_path: Path) -> None:
    target = tmp_path / seed_demo.HR_DB
    target.parent.mkdir(parents=True)
    with contextlib.closing(sqlite3.connect(target)) as con:
        con.execute("CREATE TABLE employees (id INTEGER)")
        con.commit()
    results = seed_demo.seed(tmp_path)
    assert results[0].built and results[0].row_counts["employees"] >= 280


# --------------------------------------------------------------------------- held-out questions


def _questions() -> list[dict[str, Any]]:
    doc = yaml.safe_load(QUESTIONS_FILE.read_text(encoding="utf-8"))
    assert set(doc) == {"questions"}
    return doc["questions"]


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def test_held_out_questions_are_labelled_and_new() -> None:
    questions = _questions()
    in_scope = [q for q in questions if q.get("template")]
    out_of_scope = [q for q in questions if q.get("template") is None]
    assert len(in_scope) >= 60 and len(out_of_scope) >= 10
    examples = {_normalise(e) for _a, t in ALL for e in t["nl_examples"]}
    seen: set[str] = set()
    for q in questions:
        assert set(q) <= {"question", "adapter", "template", "params"}
        text = _normalise(q["question"])
        assert text not in examples, f"copy of an nl_example: {q['question']}"
        assert text not in seen, f"duplicate question: {q['question']}"
        seen.add(text)
    for q in out_of_scope:
        assert q.get("adapter") is None and not q.get("params")


def test_every_template_has_a_held_out_question() -> None:
    labelled = {(q["adapter"], q["template"]) for q in _questions() if q.get("template")}
    assert {(adapter, t["id"]) for adapter, t in ALL} <= labelled


def test_held_out_labels_run_against_the_data(built: Path) -> None:
    by_id = {(adapter, t["id"]): t for adapter, t in ALL}
    for q in (q for q in _questions() if q.get("template")):
        template = by_id[(q["adapter"], q["template"])]
        declared = {p["name"]: p for p in template.get("parameters", [])}
        params = q.get("params") or {}
        assert set(params) <= set(declared), q["question"]
        for name, spec in declared.items():
            if spec.get("required"):
                assert name in params, f"{q['question']}: required {name} not labelled"
            if name in params and spec.get("allowed_values"):
                assert params[name] in spec["allowed_values"], q["question"]
        values = {**sample_params(template), **params}
        values = {
            k: date.fromisoformat(v) if declared[k]["type"] == "date" and isinstance(v, str) else v
            for k, v in values.items()
        }
        _columns, rows = run(built, q["adapter"], template["sql"], values)
        assert rows, f"labelled question finds no data: {q['question']}"
