"""`backend: memory | redis` blocks (sessions, result_cache, rerank_cache): a key that only the other
backend reads is an error, never silently ignored; a Redis URL the client cannot use is an error at load."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from server.adapters.result_cache import ResultCacheSettings
from server.cluster_settings import ClusterSettings
from server.config.errors import ConfigError
from server.conversations.settings import SessionSettings
from server.embedding.shared_cache import SharedEmbeddingCacheSettings
from server.rerankers.shared_cache import RerankCacheSettings
from server.runtime.loader import load_config
from server.testing.configs import BASE_CONFIG, make_tree

REDIS = {"backend": "redis", "url": "redis://127.0.0.1:6379/0"}


@pytest.mark.parametrize(
    ("model", "data", "message"),
    [
        (RerankCacheSettings, {"timeout": 2}, "timeout is only read by backend: redis"),
        (RerankCacheSettings, {"key_prefix": "x:"}, "key_prefix is only read by backend: redis"),
        (ResultCacheSettings, {"timeout": 2}, "timeout is only read by backend: redis"),
        (ResultCacheSettings, {"key_prefix": "x:"}, "key_prefix is only read by backend: redis"),
        (ResultCacheSettings, {**REDIS, "max_entries": 5}, "max_entries is only read by backend: memory"),
        (ResultCacheSettings, {**REDIS, "max_bytes": 2**20}, "max_bytes is only read by backend: memory"),
        (ResultCacheSettings, {**REDIS, "max_entry_share": 0.5}, "max_entry_share is only read by backend: memory"),
        (SessionSettings, {"key_prefix": "x:"}, "key_prefix is only read by backend: redis"),
        (SessionSettings, {"url": REDIS["url"]}, "url is only read by backend: redis"),
        (SessionSettings, {"timeout": 2}, "timeout is only read by backend: redis"),
        (SessionSettings, {**REDIS, "timeout": 0}, "greater than 0"),
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
        (ResultCacheSettings, {"max_entries": 5, "max_bytes": 2**20, "max_entry_share": 0.5}),
        (SessionSettings, {**REDIS, "key_prefix": "x:", "timeout": 0.5}),
    ],
)
def test_keys_of_the_chosen_backend_are_accepted(model: type[BaseModel], data: dict) -> None:
    assert model.model_validate(data).model_fields_set == set(data)


BAD_URL = "h:6379"  # no scheme: the Redis client refuses it when the server builds the cache


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (RerankCacheSettings, {"backend": "redis", "url": BAD_URL}),
        (ResultCacheSettings, {"backend": "redis", "url": BAD_URL}),
        (SessionSettings, {"backend": "redis", "url": BAD_URL}),
        (SharedEmbeddingCacheSettings, {"url": BAD_URL}),
        (ClusterSettings, {"enabled": True, "redis_url": BAD_URL}),
    ],
)
def test_a_redis_url_without_its_scheme_is_refused_when_the_config_loads(model: type[BaseModel], data: dict) -> None:
    with pytest.raises(ValidationError, match="must start with redis://, rediss:// or unix://"):
        model.model_validate(data)


def test_the_refused_url_is_not_repeated_in_the_error(tmp_path) -> None:
    """A Redis URL may hold a password: the config error names the key, not the value."""
    tree = make_tree(tmp_path, BASE_CONFIG + "rerank_cache: {backend: redis, url: ':s3cret@h:6379'}\n", {}, {})
    with pytest.raises(ConfigError) as caught:
        load_config(tree)
    assert "rerank_cache.url" in str(caught.value) and "s3cret" not in str(caught.value)
