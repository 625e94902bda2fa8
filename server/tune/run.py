"""`tune-encoder`: tune the configured local encoder on the config's templates and write a model folder.

Steps: read the base folder (the configured one, or the base a tuned folder was tuned from), hold out
examples within templates, gather the out-of-scope anchors (anchors.py), embed with the untuned weights
(validation baseline and nearest-template order for hard negatives), train (train.py), validate again,
write folder + manifest (folder.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from server.embedding.model_folder import ModelFolder, bundled_folder, read_folder
from server.embedding.tuned_manifest import read_manifest, templates_hash
from server.templates import Template
from server.tune.train import TuneLog, TuneSettings


@dataclass(frozen=True)
class TuneResult:
    model_path: Path
    seconds: float
    log: TuneLog
    validation: dict[str, Any]
    templates: int
    templates_hash: str
    anchors: dict[str, Any]

    def dump(self) -> dict[str, Any]:
        return {
            "model_path": str(self.model_path),
            "anchors": self.anchors,
            "seconds": round(self.seconds, 1),
            "train_seconds": round(self.log.seconds, 1),
            "train_cpu_seconds": round(self.log.cpu_seconds, 1),
            "steps": self.log.steps,
            "stopped_by": self.log.stopped_by,
            "first_loss": self.log.first_loss,
            "last_loss": self.log.last_loss,
            "templates": self.templates,
            "templates_hash": self.templates_hash,
            "validation": self.validation,
        }


def base_folder(configured: ModelFolder | None) -> ModelFolder:
    """What to tune from: the configured folder, unless it is itself a tuned one (then the base it was
    tuned from, so re-tuning never compounds on an earlier tune's weights)."""
    if configured is None or configured.bundled:
        return bundled_folder()
    manifest = read_manifest(configured.root)
    if manifest is None:
        return configured
    base = manifest.get("base_model", {}).get("path")
    return read_folder(Path(base)) if base else bundled_folder()


def tune_encoder(
    templates: Mapping[str, Sequence[Template]],
    base: ModelFolder,
    target: Path,
    settings: TuneSettings,
    validation: float,
    progress: Callable[[TuneLog], None],
    out_of_scope: Sequence[str] = (),
) -> TuneResult:
    """Tune `base` on the templates (and push `out_of_scope`, the operator's questions, out of scope)."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    from server.embedding.minilm_graph import BertShape
    from server.tune.anchors import AnchorBatches, Anchors, write_verb_anchors
    from server.tune.bert_jax import trainable_params
    from server.tune.folder import write_folder
    from server.tune.mix import mixed
    from server.tune.pairs import anchor_scores, centroid_scores, neighbour_order, split_examples
    from server.tune.train import Tokens, embed, tune

    started = time.perf_counter()
    rng = np.random.default_rng(settings.seed)
    split = split_examples(templates, validation, rng)
    anchor_rng = np.random.default_rng([settings.seed, 1])  # its own stream: the pairs drawn stay the same
    generated, verbs = (
        write_verb_anchors(split.train, settings.anchors_per_template, anchor_rng)
        if settings.write_verb_anchors
        else ([[] for _ in split.train], [])
    )
    anchors = Anchors(generated, list(dict.fromkeys(q.strip() for q in out_of_scope if q.strip())), verbs)
    shape = BertShape.from_config(base.bert_config())
    raw = load_file(str(base.weights))
    params = trainable_params(raw)
    tokens = Tokens(Tokenizer.from_file(str(base.tokenizer)), base.max_tokens)

    def scores(p: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
        flat = [t for texts in split.train for t in texts] + [t for texts in split.held_out for t in texts]
        vectors = embed(p, tokens, flat + anchors.all, shape, base.pooling)
        train_v, held_v, at = [], [], 0
        for texts in split.train:
            train_v.append(vectors[at : at + len(texts)])
            at += len(texts)
        for texts in split.held_out:
            held_v.append(vectors[at : at + len(texts)])
            at += len(texts)
        found: dict[str, Any] = centroid_scores(train_v, held_v) if split.held_out_count else {}
        if anchors.all:
            found["anchors"] = anchor_scores(train_v, vectors[at:])
        return train_v, found

    train_vectors, before = scores(params)
    centroids = np.stack([v.mean(0) for v in train_vectors])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    sampler = AnchorBatches(anchors, settings.anchors_per_batch, anchor_rng) if anchors.all else None
    tuned, log = tune(
        params, split.train, neighbour_order(centroids), tokens, shape, base.pooling, settings, progress, sampler
    )
    prefix = "bert." if any(k.startswith("bert.") for k in raw) else ""
    stock = {name: raw[prefix + name] for name in tuned}  # `params` went to the training steps (donated)
    final = mixed(stock, tuned, settings.stock_share)
    _, after = scores(final) if split.held_out_count or anchors.all else (None, {})

    weights = dict(raw)
    for name, value in final.items():
        weights[prefix + name] = np.asarray(value, dtype=raw[prefix + name].dtype)
    digest = templates_hash(templates)
    validation_report = {
        "held_out_examples": split.held_out_count,
        "share": validation,
        "before": before,
        "after": after,
    }
    manifest = {
        "base_model": {"name": base.name, "path": None if base.bundled else str(base.root.resolve())},
        "templates_hash": digest,
        "templates": len(split.keys),
        "settings": {**settings.dump(), "validation": validation},
        "anchors": anchors.describe(),
        "steps": log.steps,
        "train_seconds": round(log.seconds, 1),
        "train_cpu_seconds": round(log.cpu_seconds, 1),
        "validation": validation_report,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = write_folder(base, weights, target, manifest)
    return TuneResult(
        path, time.perf_counter() - started, log, validation_report, len(split.keys), digest, anchors.describe()
    )
