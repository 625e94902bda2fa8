"""Embedding settings refuse what no provider could honour."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from server.embedding import EmbeddingSettings


def test_defaults_are_local_and_cached() -> None:
    s = EmbeddingSettings()
    assert (s.provider, s.model, s.batch_size, s.cache.enabled) == ("minilm", "all-MiniLM-L6-v2", 64, True)
    assert s.cache.path == "data/embedding_cache.sqlite3" and s.cache.shared is None  # not shared unless asked


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"provider": "openai_compatible", "model": "nomic-embed-text"}, "requires base_url"),
        ({"provider": "openai_compatible", "base_url": "127.0.0.1:11434"}, "http://"),
        ({"model": "bge-small"}, "only bundles all-MiniLM-L6-v2"),
        ({"base_url": "http://127.0.0.1:1/v1"}, "only to provider 'openai_compatible'"),
        ({"api_key": "sk-secret"}, "Extra inputs are not permitted"),
        ({"cache": {"enabled": True, "ttl": 5}}, "Extra inputs are not permitted"),
        ({"cache": {"shared": {"url": "redis://127.0.0.1:6379/0", "ttl": 5}}}, "Extra inputs are not permitted"),
        ({"cache": {"shared": {"key_prefix": "x:"}}}, "Field required"),  # the url
        ({"cache": {"enabled": False, "shared": {"url": "redis://127.0.0.1:6379/0"}}}, "needs cache.enabled"),
        ({"cache": {"shared": {"url": "redis://127.0.0.1:6379/0", "ttl_seconds": 0}}}, "greater than 0"),
        ({"batch_size": 0}, "greater than or equal to 1"),
        ({"timeout": 0}, "greater than 0"),
    ],
)
def test_invalid_settings(data: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EmbeddingSettings.model_validate(data)


def test_remote_settings() -> None:
    s = EmbeddingSettings(
        provider="openai_compatible",
        model="nomic-embed-text",
        base_url="http://127.0.0.1:11434/v1",
        api_key_env="EMBED_KEY",
    )
    assert s.api_key_env == "EMBED_KEY"
    assert EmbeddingSettings(model="sentence-transformers/all-MiniLM-L6-v2").provider == "minilm"
