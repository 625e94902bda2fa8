"""Shared HTTP plumbing for the http and graphql adapters: pooled aiohttp session, auth from the
environment, and errors that name the adapter, never the remote server's text.

One request is one attempt; what is worth retrying is marked here (the statuses of
`resilience.transient_http_status`, with the server's `Retry-After`, and connection failures:
`transient=True`) and the adapter's `retries:` policy (resilience.py) retries it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from yarl import URL

from ..api.health import Health
from ..config.errors import ConfigError, ConfigIssue
from ..config.types import EnvVarName
from ..errors import QueryFailed, SourceTimeout, SourceUnavailable
from ..resilience import parse_retry_after, transient_http_status
from .base import DataAdapter
from .row_values import to_json_value

log = logging.getLogger("intent_router.adapters.web")


class AuthSettings(BaseModel):
    """Credentials are named by environment variable, never written in the config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["bearer", "api_key", "basic"] = Field(description="`bearer`, `api_key` or `basic`")
    token_env: EnvVarName | None = Field(None, description="bearer: NAME of the environment variable holding the token")
    header: str = Field("X-API-Key", pattern=r"^[A-Za-z0-9-]+$", description="api_key: the header that carries the key")
    key_env: EnvVarName | None = Field(None, description="api_key: NAME of the environment variable holding the key")
    username: str | None = Field(None, description="basic: the user")  # basic
    username_env: EnvVarName | None = Field(
        None, description="basic: NAME of the environment variable holding the user, instead of username"
    )
    password_env: EnvVarName | None = Field(
        None, description="basic: NAME of the environment variable holding the password"
    )

    @model_validator(mode="after")
    def _complete(self) -> AuthSettings:
        needs = {"bearer": ["token_env"], "api_key": ["key_env"], "basic": ["password_env"]}[self.type]
        absent = [k for k in needs if getattr(self, k) is None]
        if self.type == "basic" and self.username is None and self.username_env is None:
            absent.append("username or username_env")
        if absent:
            raise ValueError(f"auth type '{self.type}' needs {absent}")
        return self

    def headers(self, adapter: str) -> dict[str, str]:
        """Read the secrets now; a missing variable is a config error naming it."""

        def env(key: str, name: str | None) -> str:
            value = os.environ.get(name or "")
            if not value:
                raise ConfigError(
                    [ConfigIssue(adapter, None, f"connection.auth.{key}", f"environment variable {name} is not set")]
                )
            return value

        if self.type == "bearer":
            return {"Authorization": f"Bearer {env('token_env', self.token_env)}"}
        if self.type == "api_key":
            return {self.header: env("key_env", self.key_env)}
        user = self.username if self.username is not None else env("username_env", self.username_env)
        return {"Authorization": aiohttp.encode_basic_auth(user, env("password_env", self.password_env))}


class WebConnection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(description="base URL (http) or endpoint (graphql)")
    headers: dict[str, str] = Field(default_factory=dict, description="headers sent with every request")
    auth: AuthSettings | None = Field(None, description="credentials, named by environment variable")
    pool_size: int = Field(10, ge=1, le=500, description="connections kept open")
    connect_timeout: float = Field(5.0, gt=0, description="seconds to connect")
    health_path: str | None = Field(None, pattern=r"^/[^?#]*$", description="GET this path for /health")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        url = URL(value)
        if url.scheme not in {"http", "https"} or not url.host:
            raise ValueError("url must be an http:// or https:// URL with a host")
        if url.query_string or url.fragment:
            raise ValueError("url must not carry a query string or fragment")
        return value


@dataclass
class Reply:
    status: int
    data: Any


class WebClient:
    """One pooled session per adapter; `call` returns parsed JSON or raises a safe, adapter-named error."""

    def __init__(self, adapter: str, connection: WebConnection) -> None:
        self.adapter = adapter
        self.connection = connection
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        conn = self.connection
        headers = {"Accept": "application/json", "User-Agent": "intent-router", **conn.headers}
        if conn.auth is not None:
            headers.update(conn.auth.headers(self.adapter))
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=conn.pool_size),
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=None, connect=conn.connect_timeout),
            json_serialize=lambda v: json.dumps(v, default=to_json_value, ensure_ascii=False),
        )

    async def health(self, timeout: float) -> dict[str, Any]:
        """GET `health_path` when configured; any answer below 500 means the source is up."""
        if self._session is None:
            return {"status": Health.DOWN, "reason": "not started"}
        path = self.connection.health_path
        if path is None:
            return {"status": Health.OK, "checked": False}
        try:
            async with (
                asyncio.timeout(timeout),
                self._session.get(URL(self.connection.url.rstrip("/") + path), allow_redirects=False) as response,
            ):
                if response.status < 500:
                    return {"status": Health.OK}
                return {"status": Health.DOWN, "reason": f"source answered HTTP {response.status}"}
        except (TimeoutError, aiohttp.ClientError):
            return {"status": Health.DOWN, "reason": "cannot reach the source"}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def started(self) -> bool:
        return self._session is not None

    async def call(
        self,
        method: str,
        url: URL,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float,
        accept_error_json: bool = False,
    ) -> Reply:
        """One attempt at the request within the timeout; transient failures are marked for the retry policy."""
        if self._session is None:
            raise SourceUnavailable(self.adapter, "adapter is not started")
        kwargs: dict[str, Any] = {"params": query or None, "headers": headers or None}
        if body is not None:
            kwargs["json"] = body
        try:
            async with (
                asyncio.timeout(timeout),
                self._session.request(method, url, allow_redirects=False, **kwargs) as response,
            ):
                status = response.status
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                text = await response.text(errors="replace")
        except TimeoutError:
            raise SourceTimeout(self.adapter, timeout) from None
        except aiohttp.ClientError as exc:
            log.warning("adapter %s: cannot reach %s: %s", self.adapter, url.origin(), exc)
            raise SourceUnavailable(self.adapter, "cannot reach the source", transient=True) from None
        return self._reply(status, text, retry_after, accept_error_json)

    def _reply(self, status: int, text: str, retry_after: float | None, accept_error_json: bool) -> Reply:
        if status == 429 or status >= 500:
            log.warning("adapter %s: source answered HTTP %s", self.adapter, status)
            raise SourceUnavailable(
                self.adapter,
                f"source answered HTTP {status}",
                transient=transient_http_status(status),
                retry_after=retry_after,
            )
        try:
            data = json.loads(text) if text else None
        except ValueError:
            data = _NOT_JSON
        if status >= 300 and not (accept_error_json and data is not _NOT_JSON):
            log.warning("adapter %s: source answered HTTP %s: %.300s", self.adapter, status, text)
            raise QueryFailed(self.adapter, f"source answered HTTP {status}")
        if data is _NOT_JSON:
            raise QueryFailed(self.adapter, "source answered with something that is not JSON")
        return Reply(status=status, data=data)


_NOT_JSON = object()


class WebAPIAdapter(DataAdapter):
    """What the http and graphql adapters share: one pooled WebClient, its lifecycle and health."""

    def __init__(self, settings, context) -> None:
        super().__init__(settings, context)
        self.client = WebClient(self.name, settings.connection)

    async def start(self) -> None:
        await self.client.start()

    async def close_source(self) -> None:
        await self.client.close()

    async def source_health(self) -> dict[str, Any]:
        return await self.client.health(self.client.connection.connect_timeout)
