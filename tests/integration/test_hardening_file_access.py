"""Templates cannot reach the server's files: DuckDB runs with external access off (opt-in per path), file
readers are refused at load with file:line, and SQLite templates cannot load extensions or touch files."""

from __future__ import annotations

import duckdb
import pytest

from server.config.errors import ConfigError
from server.errors import QueryFailed, SourceUnavailable
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_config
from server.testing.adapter_harness import started
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, make_people_db, make_tree


def make_sales(path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customers AS SELECT 'Ada' AS name")
    con.close()


def duck_settings(tmp_path, **connection) -> dict:
    make_sales(tmp_path / "sales.duckdb")
    return {"name": "sales", "type": "duckdb", "connection": {"path": str(tmp_path / "sales.duckdb"), **connection}}


def one_template(sql: str) -> str:
    return "templates:\n  - id: t\n    description: d\n    sql: |\n      " + sql + "\n"


@pytest.fixture
def secret_csv(tmp_path):
    path = tmp_path / "outside" / "secret.csv"
    path.parent.mkdir()
    path.write_text("token\nhunter2\n")
    return path


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM '{secret}'",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_blob('{secret}')",
    ],
)
async def test_duckdb_cannot_read_files_at_run_time(tmp_path, secret_csv, sql):
    """The harness skips the load-time check, as a hand-built runtime would: the engine itself refuses."""
    async with started(tmp_path, duck_settings(tmp_path), one_template(sql.format(secret=secret_csv))) as adapter:
        with pytest.raises(QueryFailed) as caught:
            await adapter.execute(adapter.templates["t"], {})
    assert caught.value.status == 502 and "hunter2" not in caught.value.message


async def test_duckdb_database_itself_still_answers(tmp_path):
    async with started(tmp_path, duck_settings(tmp_path), one_template("SELECT name FROM customers")) as adapter:
        result = await adapter.execute(adapter.templates["t"], {})
    assert result.rows == [{"name": "Ada"}]


async def test_allowed_paths_open_only_the_listed_files_and_directories(tmp_path, secret_csv):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "prices.csv").write_text("item,price\napple,3\n")
    settings = duck_settings(tmp_path, allowed_paths=["shared", str(secret_csv)])
    body = one_template(f"SELECT * FROM read_csv('{shared / 'prices.csv'}')")
    async with started(tmp_path, settings, body) as adapter:
        assert (await adapter.execute(adapter.templates["t"], {})).rows == [{"item": "apple", "price": 3}]
    async with started(tmp_path, settings, one_template(f"SELECT * FROM '{secret_csv}'")) as adapter:
        assert (await adapter.execute(adapter.templates["t"], {})).rows == [{"token": "hunter2"}]
    sibling = tmp_path / "outside" / "other.csv"
    sibling.write_text("a\n1\n")
    for sql in (f"SELECT * FROM read_csv('{sibling}')", "SELECT * FROM read_text('/etc/hostname')"):
        async with started(tmp_path, settings, one_template(sql)) as adapter:
            with pytest.raises(QueryFailed):
                await adapter.execute(adapter.templates["t"], {})
    # a template cannot switch access back on: SET is refused at load, and the configuration is locked
    async with started(tmp_path, settings, one_template("SELECT 1 AS one")) as adapter:
        with pytest.raises(duckdb.Error, match="locked"):
            adapter._conn.execute("SET enable_external_access = true")


DUCK_ADAPTER = """
adapters:
  - name: sales
    type: duckdb
    connection: {path: templates/sales.duckdb}
    templates: ["templates/sales/*.yaml"]
"""
READERS = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "SELECT content FROM read_text('/etc/hostname')",
    "SELECT * FROM read_parquet('x.parquet')",
    "SELECT * FROM read_json_auto('x.json')",
    "SELECT * FROM read_ndjson('x.json')",
    "SELECT * FROM parquet_scan('x.parquet')",
    "SELECT * FROM parquet_metadata('x.parquet')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM sniff_csv('/etc/passwd')",
    "SELECT * FROM sqlite_scan('other.db', 't')",
    "SELECT * FROM 'data.csv'",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM 'https://example.com/x.csv'",
    "SELECT c.name FROM customers c JOIN read_csv('/etc/passwd') p ON true",
    "SELECT name FROM customers WHERE name IN (SELECT * FROM read_text('/etc/hostname'))",
]


def duck_tree(tmp_path, sql: str, connection_extra: str = "", values_from: str | None = None):
    make_sales(tmp_path / "templates" / "sales.duckdb")
    adapter = DUCK_ADAPTER.replace("templates/sales.duckdb}", "templates/sales.duckdb" + connection_extra + "}")
    params = ""
    if values_from is not None:
        params = f'    parameters:\n      - {{name: who, type: string, values_from: {{query: "{values_from}"}}}}\n'
        sql = "SELECT name FROM customers WHERE name = :who"
    lib = f'templates:\n  - id: reader\n    description: d\n{params}    sql: "{sql}"\n'
    return make_tree(tmp_path, BASE_CONFIG, {"sales.yaml": adapter}, {"sales/lib.yaml": lib})


@pytest.mark.parametrize("sql", READERS)
def test_duckdb_file_readers_are_refused_at_load_with_file_and_line(tmp_path, sql):
    with pytest.raises(ConfigError) as info:
        load_config(duck_tree(tmp_path, sql))
    [issue] = info.value.issues
    assert (issue.file, issue.line, issue.key) == ("templates/sales/lib.yaml", 2, "templates[id=reader].sql")
    assert "connection.allowed_paths" in issue.message


def test_duckdb_file_reader_in_values_from_is_refused(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(duck_tree(tmp_path, "", values_from="SELECT * FROM read_csv('/etc/passwd')"))
    [issue] = info.value.issues
    assert issue.key == "templates[id=reader].parameters[0].values_from.query"


def test_allowed_paths_lets_file_readers_load(tmp_path):
    loaded = load_config(duck_tree(tmp_path, "SELECT * FROM read_csv('data/x.csv')", ", allowed_paths: [data]"))
    assert loaded.adapters[0].connection.allowed_paths == ["data"]


@pytest.mark.parametrize("sql", ["SELECT * FROM query('SELECT 1')", "SELECT getenv('HOME') AS h"])
def test_sql_in_strings_and_environment_are_refused_even_with_allowed_paths(tmp_path, sql):
    with pytest.raises(ConfigError) as info:
        load_config(duck_tree(tmp_path, sql, ", allowed_paths: [data]"))
    assert "is not allowed in a template" in info.value.issues[0].message


SQLITE_REFUSED = [
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT readfile('/etc/passwd') AS f",
    "SELECT writefile('/tmp/x', 'data') AS n",
    "SELECT fts3_tokenizer('simple') AS t",
    "SELECT * FROM fsdir('/etc')",
    "SELECT * FROM sqlite_dbpage",
    "SELECT name FROM people WHERE name = (SELECT load_extension('x'))",
]


@pytest.mark.parametrize("sql", SQLITE_REFUSED)
def test_sqlite_extension_and_file_functions_are_refused_at_load(tmp_path, sql):
    make_people_db(tmp_path / "templates" / "people.db")
    lib = f'templates:\n  - id: evil\n    description: d\n    sql: "{sql}"\n'
    tree = make_tree(tmp_path, BASE_CONFIG, {"people.yaml": PEOPLE_ADAPTER}, {"people/p.yaml": lib})
    with pytest.raises(ConfigError) as info:
        load_config(tree)
    [issue] = info.value.issues
    assert (issue.file, issue.line) == ("templates/people/p.yaml", 4)  # the sql: line
    assert "not allowed" in issue.message


@pytest.mark.parametrize("sql", ["ATTACH DATABASE '/tmp/x.db' AS x", "PRAGMA writable_schema = 1"])
def test_sqlite_attach_and_pragma_stay_refused(tmp_path, sql):
    make_people_db(tmp_path / "templates" / "people.db")
    lib = f'templates:\n  - id: evil\n    description: d\n    sql: "{sql}"\n'
    tree = make_tree(tmp_path, BASE_CONFIG, {"people.yaml": PEOPLE_ADAPTER}, {"people/p.yaml": lib})
    with pytest.raises(ConfigError):
        load_config(tree)


async def test_a_second_adapter_on_an_open_database_file_starts(tmp_path):
    """A reload builds the new adapter while the old one still holds the file (DuckDB shares one locked
    instance per file in a process): the same access lists are accepted, a changed list is refused."""
    same = duck_settings(tmp_path)
    body = one_template("SELECT name FROM customers")
    async with started(tmp_path, same, body) as old, started(tmp_path, same, body) as new:
        assert (await new.execute(new.templates["t"], {})).rows == [{"name": "Ada"}]
        assert (await old.execute(old.templates["t"], {})).rows == [{"name": "Ada"}]
    (tmp_path / "shared").mkdir()
    widened = {**same, "connection": {**same["connection"], "allowed_paths": ["shared"]}}
    async with started(tmp_path, same, body):
        with pytest.raises(SourceUnavailable, match="allowed_paths changed"):
            async with started(tmp_path, widened, body):
                pass


async def test_reloading_a_changed_duckdb_adapter_file_is_applied(tmp_path):
    make_sales(tmp_path / "templates" / "sales.duckdb")
    adapter = (
        "adapters:\n  - name: sales\n    type: duckdb\n"
        "    connection: {path: templates/sales.duckdb}\n"
        "    templates: ['templates/sales/*.yaml']\n    max_rows: 100\n"
    )
    config_dir = make_tree(
        tmp_path,
        BASE_CONFIG,
        {"sales.yaml": adapter},
        {"sales/sales.yaml": one_template("SELECT name FROM customers").replace("d\n", "customer names\n", 1)},
    )
    holder = RuntimeHolder(config_dir, close_grace=0.2)
    await holder.start()
    try:
        (config_dir / "adapters" / "sales.yaml").write_text(adapter.replace("max_rows: 100", "max_rows: 50"))
        status = await holder.reload()
        assert status.ok, status.errors
        runtime = holder.current
        assert runtime.get("sales").settings.max_rows == 50
        result = await runtime.get("sales").adapter.execute(runtime.get("sales").templates["t"], {})
        assert result.rows == [{"name": "Ada"}]
    finally:
        await holder.close()


@pytest.mark.parametrize("via", ["symlink", "dotdot"])
async def test_a_second_adapter_on_a_file_reached_through_a_link_starts(tmp_path, via):
    """DuckDB names its own files by their real path; an adapter whose `path` goes through a symlink or
    `..` must still recognise them, or every reload that rebuilds it is refused as needing a restart."""
    settings = duck_settings(tmp_path)
    if via == "symlink":
        (tmp_path / "current").symlink_to(tmp_path, target_is_directory=True)
        path = tmp_path / "current" / "sales.duckdb"
    else:
        (tmp_path / "sub").mkdir()
        path = tmp_path / "sub" / ".." / "sales.duckdb"
    settings = {**settings, "connection": {"path": str(path)}}
    body = one_template("SELECT name FROM customers")
    async with started(tmp_path, settings, body) as old, started(tmp_path, settings, body) as new:
        assert (await new.execute(new.templates["t"], {})).rows == [{"name": "Ada"}]
        assert (await old.execute(old.templates["t"], {})).rows == [{"name": "Ada"}]


@pytest.mark.parametrize("change", [{"threads": 3}, {"read_only": False}])
async def test_a_changed_open_configuration_asks_for_a_restart(tmp_path, change):
    """DuckDB refuses a second instance of an open file with other settings: the reload's error says
    which keys and what to do, not that the database cannot be opened."""
    same = duck_settings(tmp_path)
    changed = {**same, "connection": {**same["connection"], **change}}
    body = one_template("SELECT name FROM customers")
    async with started(tmp_path, same, body):
        with pytest.raises(SourceUnavailable, match=r"read_only or threads changed .* restart the server"):
            async with started(tmp_path, changed, body):
                pass
