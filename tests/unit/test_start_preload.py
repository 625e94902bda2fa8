"""At start the holder loads config.yaml's local embedding model while the templates are read; the build
then finds it loaded. A config that does not load, or a remote provider, is left to the full load."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.config.errors import ConfigError
from server.embedding import factory
from server.embedding.minilm import MODEL_ID
from server.embedding.settings import EmbeddingSettings
from server.runtime.holder import _preload_embedder
from server.runtime.loader import load_config


def config_dir(tmp_path: Path, config_yaml: str) -> Path:
    config = tmp_path / "config"
    (config / "adapters").mkdir(parents=True)
    (config / "config.yaml").write_text(config_yaml)
    return config


@pytest.mark.parametrize(
    ("config_yaml", "reported"),
    [
        ("embedding: {provider: nonsense, cache: {path: data/c.sqlite3}}\n", "embedding.provider"),
        ("embedding: [not, a, mapping\n", "config/config.yaml:2: YAML syntax error"),
    ],
    ids=["invalid-value", "broken-yaml"],
)
def test_a_config_that_does_not_validate_is_left_to_the_full_load(tmp_path, config_yaml, reported):
    config = config_dir(tmp_path, config_yaml)
    earlier = factory._MODELS.pop(MODEL_ID, None)  # so that a model loaded here would show
    try:
        before = dict(factory._MODELS)
        _preload_embedder(config)  # no exception ...
        assert before == factory._MODELS  # ... and no model loaded (not even the default MiniLM)
        assert not (tmp_path / "data").exists()  # nor its graph directory made
    finally:
        if earlier is not None:
            factory._MODELS[MODEL_ID] = earlier
    with pytest.raises(ConfigError) as caught:  # the full load reports what is wrong, with file:line
        load_config(config)
    assert reported in str(caught.value)


def test_a_remote_provider_loads_no_local_model(tmp_path):
    before = dict(factory._MODELS)
    settings = EmbeddingSettings(provider="openai_compatible", base_url="http://127.0.0.1:9/v1", model="m")
    factory.preload(settings, tmp_path)
    assert before == factory._MODELS


def test_the_local_model_is_loaded_for_the_build(tmp_path):
    config = config_dir(tmp_path, f"embedding: {{cache: {{path: {tmp_path / 'data' / 'cache.sqlite3'}}}}}\n")
    earlier = factory._MODELS.pop(MODEL_ID, None)  # loaded by another test of this process: load it again here
    try:
        _preload_embedder(config)
        model = factory._MODELS[MODEL_ID]
        assert factory.shared_minilm(tmp_path / "data" / "models") is model  # the build's call finds it
        assert (tmp_path / "data" / "models").is_dir()  # the graph directory the build would use
    finally:
        if earlier is not None:
            factory._MODELS[MODEL_ID] = earlier
