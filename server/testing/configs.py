"""Write small config trees (config.yaml + adapters/*.yaml + template libraries) for tests."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

BASE_CONFIG = """
embedding:
  provider: minilm
  cache: {enabled: true, path: data/embedding_cache.sqlite3}
store: {backend: memory}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def make_tree(
    root: Path,
    config: str = BASE_CONFIG,
    adapters: dict[str, str] | None = None,
    libraries: dict[str, str] | None = None,
) -> Path:
    """Create root/config/... and root/templates/...; returns the config directory."""
    write(root / "config" / "config.yaml", config)
    for name, text in (adapters or {}).items():
        write(root / "config" / "adapters" / name, text)
    for name, text in (libraries or {}).items():
        write(root / "templates" / name, text)
    (root / "config" / "adapters").mkdir(parents=True, exist_ok=True)
    return root / "config"


def make_people_db(path: Path) -> Path:
    """A tiny SQLite database used by adapter tests."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, department TEXT, salary REAL);
        INSERT INTO people (name, department, salary) VALUES
          ('Ada', 'Engineering', 120000), ('Grace', 'Engineering', 130000),
          ('Linus', 'Sales', 90000), ('Ken', 'HR', 70000);
    """)
    con.commit()
    con.close()
    return path


PEOPLE_LIBRARY = """
templates:
  - id: people_in_department
    description: List the people who work in a department
    nl_examples: ["Who works in Engineering?", "Show me the people in Sales", "list staff of the HR department"]
    parameters:
      - {name: department, type: string, required: true, allowed_values: [Engineering, Sales, HR]}
    sql: "SELECT name FROM people WHERE department = :department ORDER BY name"
  - id: headcount_by_department
    description: Count how many people work in each department
    nl_examples: ["How many people are in each department?", "headcount per department"]
    sql: "SELECT department, COUNT(*) AS n FROM people GROUP BY department ORDER BY department"
    result_format: summary
  - id: person_by_name
    description: Look up one person by name
    nl_examples: ["Find the employee called Ada", "show me the record for Grace"]
    parameters:
      - {name: name, type: string, required: true}
    sql: "SELECT name, department, salary FROM people WHERE name = :name"
"""

PEOPLE_ADAPTER = """
adapters:
  - name: people
    type: sql
    connection: {url: "sqlite:///templates/people.db"}
    templates: ["templates/people/*.yaml"]
    confidence_threshold: 0.3
"""


def people_tree(root: Path, config: str = BASE_CONFIG, library: str = PEOPLE_LIBRARY) -> Path:
    """The people database and an adapter `people` over it, with `library` for its templates."""
    make_people_db(root / "templates" / "people.db")
    return make_tree(root, config, {"people.yaml": PEOPLE_ADAPTER}, {"people/people.yaml": library})


# a weather template (a required city, an optional day) for conversation tests: the library's entry, to put
# under `templates:` beside others
WEATHER_TEMPLATE = """
  - id: weather
    description: The weather forecast for a city on a day
    nl_examples:
      - "what's the weather in [Paris](city) tomorrow"
      - "check the weather for [Boston](city) on Friday"
      - "will it rain in [Denver](city) on March 3rd"
      - "weather forecast please"
      - "how hot will it be in [Austin](city)"
    parameters:
      - {name: city, type: string, required: true}
      - {name: day, type: date}
    sql: "SELECT :city AS city, :day AS day"
"""
