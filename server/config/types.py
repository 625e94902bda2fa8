"""Field types shared by config models: the same check written once, the same message everywhere."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError("must be an environment variable NAME (letters, digits, _), not a secret")
    return value


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    return value


def _redis_url(value: str) -> str:
    if not value.startswith(("redis://", "rediss://", "unix://")):  # what the Redis client accepts
        raise ValueError("must start with redis://, rediss:// or unix://")
    return value


EnvVarName = Annotated[str, AfterValidator(_env_name)]  # secrets are named, never written in YAML
HttpUrl = Annotated[str, AfterValidator(_http_url)]
RedisUrl = Annotated[str, AfterValidator(_redis_url)]  # may hold a password: errors never repeat it
