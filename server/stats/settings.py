"""The `stats:` block of config.yaml: where the routing log lives and how much it keeps."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class StatsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    # SQLAlchemy URL; several server processes can share one PostgreSQL log
    # (e.g. postgresql+psycopg://user@host/db). Unset: a SQLite file at `path`.
    url: str | None = None
    path: str = "data/routing_log.sqlite3"  # relative to the config dir's parent
    table: str = Field("routing_log", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
    # question text is personal data: kept only when an operator opts in (unmatched questions need it)
    store_queries: bool = False
    retention_days: float = Field(30.0, gt=0)
    retention_check_seconds: float = Field(3600.0, gt=0)
    queue_size: int = Field(10_000, ge=1)  # entries waiting to be written; beyond it they are dropped
    batch_size: int = Field(500, ge=1)
    flush_interval: float = Field(0.5, gt=0)  # seconds a partial batch may wait
    # every figure comes from the rollups, exact over the window, except the unmatched questions: raw rows
    max_window_rows: int = Field(
        200_000,
        ge=1_000,
        description="unmatched entries (no_match, with their question) read for the statistics' "
        "unmatched_questions list: the newest of the window; every other figure is exact, from the rollups",
    )
