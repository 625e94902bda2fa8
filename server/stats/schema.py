"""The routing-log table and the engine it lives in (SQLite file by default, any SQLAlchemy URL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..local_sqlite import no_memory_maps
from .settings import StatsSettings


def log_table(name: str, metadata: sa.MetaData | None = None) -> sa.Table:
    metadata = metadata or sa.MetaData()
    score, ms = sa.Float, sa.Float
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("ts_ms", sa.BigInteger, nullable=False, index=True),  # integer: buckets by integer division
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("adapter", sa.String(200), nullable=False),
        sa.Column("outcome", sa.String(24), nullable=False),
        sa.Column("reason", sa.String(64)),
        sa.Column("selected_adapter", sa.String(200)),
        sa.Column("template_id", sa.String(200)),
        sa.Column("combined_score", score),
        sa.Column("embedding_score", score),
        sa.Column("stage_scores", sa.Text),  # JSON {stage: score}, embedding included
        sa.Column("threshold", score),
        sa.Column("candidates", sa.Integer, nullable=False, default=0),
        sa.Column("row_count", sa.Integer),
        sa.Column("http_status", sa.Integer, nullable=False, default=200),
        sa.Column("error_code", sa.String(64)),
        sa.Column("question", sa.Text),
        sa.Column("parameters", sa.Text),  # JSON {name: value} the template ran with (kept like question)
        sa.Column("latency_ms", ms),
        sa.Column("stage_ms", sa.Text),  # JSON {stage: milliseconds}
        sa.Column("session_hash", sa.String(32)),  # conversations: digest of the session (not the id itself)
        sa.Column("session_turn", sa.Integer),
        sa.Column("follow_up", sa.String(16)),  # clarification | choice | follow_up | correction | expired
        sa.Column("completes_turn", sa.Integer),  # the turn whose clarification or choice this message answered
        sa.Column("replica", sa.String(120)),  # cluster.enabled: the replica that decided (several share one log)
        sa.Column("search_failures", sa.Text),  # JSON [{adapter, kind: search|timeout|embedding}] of the decision
        sa.Column(
            "fan_out_sources", sa.Text
        ),  # fan_out: JSON [{adapter, template_id, score, status, rows, latency_ms}]
    )


def superseded_indexes(table: sa.Table) -> list[str]:
    """Indexes an older version made on the log for the unmatched list, which now reads its own table
    (unmatched_copy.py): dropped when the log is opened."""
    return [f"ix_{table.name}_unmatched"]


def add_missing_columns(engine: Engine, table: sa.Table) -> list[str]:
    """Bring a log table created by an older version up to this schema (new columns are nullable);
    columns it has that this version no longer writes are left alone."""
    have = {c["name"] for c in sa.inspect(engine).get_columns(table.name)}
    missing = [c for c in table.columns if c.name not in have]
    quote = engine.dialect.identifier_preparer.quote  # identifiers from this schema, quoted by the dialect
    with engine.begin() as conn:
        for column in missing:
            kind = column.type.compile(dialect=engine.dialect)
            conn.execute(sa.text(f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(column.name)} {kind}"))
    return [c.name for c in missing]


def log_url(settings: StatsSettings, root: Path) -> str:
    if settings.url:
        return settings.url
    path = Path(settings.path)
    path = path if path.is_absolute() else root / path
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        sa.event.listen(engine, "connect", _no_shared_memory)
        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2)


def _no_shared_memory(dbapi_conn: Any, _record: Any) -> None:
    """A fault in the log's files is a failed write (/health: failing), never a signal (local_sqlite.py)."""
    no_memory_maps(dbapi_conn)


def backend_name(engine: Engine) -> str:
    return engine.dialect.name


def safe_url(engine: Engine, root: Path | None = None) -> str:
    """The URL without its password, for status output; a SQLite file under `root` relative to it, one
    elsewhere by its name only (status output must not show the server's filesystem layout)."""
    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        path = Path(url.database)
        if path.is_absolute():
            try:
                shown = str(path.relative_to(root)) if root is not None else path.name
            except ValueError:
                shown = path.name
            return url.set(database=shown).render_as_string(hide_password=True)
    return url.render_as_string(hide_password=True)
