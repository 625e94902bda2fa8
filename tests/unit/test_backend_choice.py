"""`backend: memory | redis` blocks (sessions, result_cache, rerank_cache): a key that only the other
backend reads is an error, never silently ignored."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from server.adapters.result_cache import ResultCacheSettings
from server.conversations.settings import SessionSettings
from server.routing.rerankers.shared_cache import RerankCacheSettings

REDIS = {"backend": "redis", "url": "redis://127.0.0.1:6379/0"}


@pytest.mark.parametrize(
    ("model", "data", "message"),
    [
        (RerankCacheSettings, {"timeout": 2}, "timeout is only read by backend: redis"),
        (RerankCacheSettings, {"key_prefix": "x:"}, "key_prefix is only read by backend: redis"),
        (ResultCacheSettings, {"timeout": 2}, "timeout is only read by backend: redis"),
        (ResultCacheSettings, {"key_prefix": "x:"}, "key_prefix is only read by backend: redis"),
        (ResultCacheSettings, {**REDIS, "max_entries": 5}, "max_entries is only read by backend: memory"),
        (SessionSettings, {"key_prefix": "x:"}, "key_prefix is only read by backend: redis"),
        (SessionSettings, {"url": REDIS["url"]}, "url is only read by backend: redis"),
    ],
)
def test_a_key_of_the_other_backend_is_refused(model: type[BaseModel], data: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        model.model_validate(data)


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (RerankCacheSettings, {**REDIS, "timeout": 2, "key_prefix": "x:"}),
        (ResultCacheSettings, {**REDIS, "timeout": 2, "key_prefix": "x:"}),
        (ResultCacheSettings, {"max_entries": 5}),
        (SessionSettings, {**REDIS, "key_prefix": "x:"}),
    ],
)
def test_keys_of_the_chosen_backend_are_accepted(model: type[BaseModel], data: dict) -> None:
    assert model.model_validate(data).model_fields_set == set(data)
