"""The `stats:` block of config.yaml: where the routing log lives and how much it keeps."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class StatsSettings(BaseModel):
    """The routing log behind statistics and the dashboard. `enabled`, `url`, `path`, `table` and
    `queue_size` are bound when the process starts; the others apply on reload."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="log every routing decision (read at start)")
    # SQLAlchemy URL; several server processes can share one PostgreSQL log
    # (e.g. postgresql+psycopg://user@host/db). Unset: a SQLite file at `path`.
    url: str | None = Field(
        None,
        description="SQLAlchemy URL of the log's database, e.g. postgresql+psycopg://user@host/db, so several servers"
        " share one log; unset: a SQLite file at `path` (read at start)",
    )
    path: str = Field(
        "data/routing_log.sqlite3",
        description="the SQLite file when no `url` is given (relative to the config directory's parent; read at start)",
    )
    table: str = Field(
        "routing_log", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$", description="the log's table name (read at start)"
    )
    # question text is personal data: kept only when an operator opts in (unmatched questions need it)
    store_queries: bool = Field(
        False,
        description="keep the question text and the parameter values read from it (the unmatched-questions list "
        "needs the text); off: neither is ever written",
    )
    retention_days: float = Field(30.0, gt=0, description="entries older than this are deleted")
    retention_check_seconds: float = Field(3600.0, gt=0, description="how often old entries are looked for and deleted")
    queue_size: int = Field(
        10_000,
        ge=1,
        description="entries waiting to be written; beyond it they are dropped and counted (read at start)",
    )
    batch_size: int = Field(500, ge=1, description="entries written per batch")
    flush_interval: float = Field(0.5, gt=0, description="seconds a partial batch may wait before it is written")
    max_window_rows: int = Field(
        20_000,
        ge=1_000,
        description="unmatched entries (no_match, with their question) read for the statistics' unmatched_questions "
        "list, the newest of the window; every other figure is exact, from the rollups",
    )
