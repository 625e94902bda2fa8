"""The `config_cache:` block of config.yaml (config/parse_cache.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ConfigCacheSettings(BaseModel):
    """What a start derives from unchanged inputs, kept on disk: parsed template libraries and body checks (by
    content hash), the bodies a database file accepted (by the file's identity) and in-memory template stores
    (by each template's index digest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        True,
        description="keep parsed template libraries and SQL/body checks by content hash, the bodies a database "
        "file accepted (by the file's identity) and in-memory template stores (by their templates' digests), so a "
        "start or reload parses, checks and reads again only what changed",
    )
    path: str = Field(
        "data/config_cache", description="the cache's directory (relative to the config directory's parent)"
    )
