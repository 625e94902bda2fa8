"""The `auth:` block of config.yaml: API keys by role."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..config.types import EnvVarName


class ClientKey(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the key's name (in logs, metrics and session ownership)")
    key_env: EnvVarName = Field(description="NAME of the environment variable holding the key")
    adapters: list[str] | None = Field(
        None, description="the adapters this key may query (a composite's children included); unset: all"
    )


class AuthSettings(BaseModel):
    """The `auth:` block: API keys by role. Without keys the server serves without authentication and
    listens only on loopback."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    client_keys: list[ClientKey] = Field(
        default_factory=list,
        description="API keys that may query adapters (`/v1/query`, `/v1/test_routing`, `/v1/templates`, `/mcp`)",
    )
    admin_key_env: EnvVarName | None = Field(
        None, description="NAME of the environment variable holding the admin key: everything, including /admin/reload"
    )
    stats_key_env: EnvVarName | None = Field(
        None,
        description="NAME of the environment variable holding the read-only key for statistics, metrics and the "
        "dashboard",
    )

    @property
    def enabled(self) -> bool:
        return bool(self.client_keys or self.admin_key_env)
