"""The JAX forward pass tune-encoder trains equals the onnxruntime graph the server runs, on the same
weights; a user's sentence-transformers folder loads with the pooling its own config names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from server.embedding import EmbeddingError, EmbeddingSettings
from server.embedding.minilm import MODEL_ID, MiniLMEmbedder, MiniLMModel
from server.embedding.minilm_graph import BertShape
from server.embedding.model_folder import ModelFolder, bundled_folder, read_folder
from server.tune.bert_jax import encode, trainable_params

TEXTS = [
    "delete all employees",
    "how many orders did we ship last month to customers in Berlin?",
    "hi",
    "Show me the salary history of every engineer hired after 2020, sorted by department",
]


def jax_vectors(folder: ModelFolder, texts: list[str]) -> np.ndarray:
    tokenizer = Tokenizer.from_file(str(folder.tokenizer))
    tokenizer.enable_padding()
    tokenizer.enable_truncation(folder.max_tokens)
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings])
    mask = np.array([e.attention_mask for e in encodings])
    params = trainable_params(load_file(str(folder.weights)))
    return np.asarray(encode(params, ids, mask, BertShape.from_config(folder.bert_config()), folder.pooling))


def test_jax_forward_equals_the_onnxruntime_graph(minilm_embedder: MiniLMEmbedder) -> None:
    """Padded together (JAX) or length-sorted (onnxruntime): the same unit vectors to 1e-5."""
    expected = minilm_embedder.embed_sync(TEXTS)
    got = jax_vectors(bundled_folder(), TEXTS)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_dropout_applies_only_with_a_key() -> None:
    """Training's dropout changes the vectors, differently per key; with no key (serving's maths, the
    validation pass) a dropout rate changes nothing."""
    import jax

    folder = bundled_folder()
    tokenizer = Tokenizer.from_file(str(folder.tokenizer))
    tokenizer.enable_padding()
    encodings = tokenizer.encode_batch(TEXTS)
    ids = np.array([e.ids for e in encodings])
    mask = np.array([e.attention_mask for e in encodings])
    params = trainable_params(load_file(str(folder.weights)))
    shape = BertShape.from_config(folder.bert_config())
    plain = np.asarray(encode(params, ids, mask, shape))
    np.testing.assert_array_equal(np.asarray(encode(params, ids, mask, shape, "mean", 0.1)), plain)
    one, two = (np.asarray(encode(params, ids, mask, shape, "mean", 0.1, jax.random.PRNGKey(k))) for k in (1, 2))
    assert np.abs(one - plain).max() > 1e-3 and np.abs(one - two).max() > 1e-3
    np.testing.assert_allclose(np.linalg.norm(one, axis=1), 1.0, atol=1e-5)
    assert (one * plain).sum(1).min() > 0.5  # a perturbation of the same sentence, not noise


@pytest.fixture(scope="module")
def cls_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundled folder whose sentence-transformers config says CLS pooling, no Normalize."""
    root = tmp_path_factory.mktemp("user") / "my-cls-model"
    shutil.copytree(bundled_folder().root, root)
    pooling = json.loads((root / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    modules = [m for m in json.loads((root / "modules.json").read_text()) if not m["type"].endswith("Normalize")]
    (root / "modules.json").write_text(json.dumps(modules))
    return root


def test_a_user_folder_loads_with_its_own_pooling(
    cls_folder: Path, tmp_path: Path, minilm_embedder: MiniLMEmbedder
) -> None:
    folder = read_folder(cls_folder)
    assert (folder.pooling, folder.normalize, folder.dim, folder.max_tokens) == ("cls", False, 384, 256)
    model = MiniLMModel(tmp_path / "models", folder=folder)
    got = MiniLMEmbedder(model).embed_sync(TEXTS)
    np.testing.assert_allclose(got, jax_vectors(folder, TEXTS), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)  # cosines: always unit vectors
    assert not np.allclose(got, minilm_embedder.embed_sync(TEXTS), atol=1e-2)  # not the mean-pooled vectors
    assert model.model_id.startswith("minilm:my-cls-model@") and model.model_id != MODEL_ID


def test_a_folder_this_runtime_cannot_run_is_refused_with_the_reason(cls_folder: Path, tmp_path: Path) -> None:
    shutil.copytree(cls_folder, tmp_path / "max")
    pooling = tmp_path / "max" / "1_Pooling" / "config.json"
    pooling.write_text(json.dumps({"pooling_mode_cls_token": False, "pooling_mode_max_tokens": True}))
    with pytest.raises(EmbeddingError, match="pooling 'max' is not supported"):
        read_folder(tmp_path / "max")
    with pytest.raises(EmbeddingError, match="does not exist"):
        read_folder(tmp_path / "nowhere")


def test_model_path_settings() -> None:
    assert EmbeddingSettings(model_path="data/tuned-encoder").model_path == "data/tuned-encoder"
    with pytest.raises(ValueError, match="leave out model"):
        EmbeddingSettings(model="all-MiniLM-L6-v2", model_path="data/tuned-encoder")
    with pytest.raises(ValueError, match="only to provider 'minilm'"):
        EmbeddingSettings(provider="openai_compatible", base_url="http://127.0.0.1:1/v1", model_path="x")
