"""Write a tuned model folder: the base folder's files with the new weights and a manifest.

The result is a sentence-transformers folder like the base (config.json, tokenizer files, modules.json,
1_Pooling/config.json), so `embedding.model_path` (and sentence-transformers itself) loads it, and the
existing onnxruntime graph builder runs it unchanged. Written beside the target and renamed into
place, so a server never reads half a folder.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from server.embedding.model_folder import MANIFEST, ModelFolder
from server.embedding.tuned_manifest import write_manifest

SKIP = {"model.safetensors", "README.md", "data_config.json", ".gitattributes", MANIFEST}


def write_folder(base: ModelFolder, weights: dict[str, np.ndarray], target: Path, manifest: dict[str, Any]) -> Path:
    """The base folder's small files + `weights` (same tensor names as the base) + the manifest."""
    from safetensors.numpy import save_file

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        for item in base.root.iterdir():
            if item.name in SKIP or item.name.startswith("."):
                continue
            if item.is_dir():
                shutil.copytree(item, tmp / item.name)
            else:
                shutil.copy2(item, tmp / item.name)
        save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, str(tmp / "model.safetensors"))
        write_manifest(tmp, manifest)
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
        tmp.rename(target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
    return target
