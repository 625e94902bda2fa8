"""The `config_cache:` block of config.yaml (config/parse_cache.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ConfigCacheSettings(BaseModel):
    """Parsed template libraries and body checks kept on disk by content hash."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        True,
        description="keep parsed template libraries and SQL/body checks by content hash, so a start or reload "
        "parses only the files that changed",
    )
    path: str = Field(
        "data/config_cache", description="the cache's directory (relative to the config directory's parent)"
    )
