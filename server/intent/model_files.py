"""Fitted intent models and acceptance tests on disk: one numpy .npz per fit, no pickle.

A warm start with unchanged templates loads the fit instead of redoing it (seconds to tens of seconds
at hundreds of templates). Each file holds plain arrays plus a JSON header (`meta`, stored as bytes)
naming the format and the fingerprint it was fitted for; a file whose header does not match, or that
does not read back, is ignored (the caller refits and overwrites it). Files are written to a temporary
name and renamed, so a reader never sees half a file, and only the most recently used few are kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np

from .acceptance import Acceptance, AcceptanceModel, Expectation, TemplateProfile
from .example_rows import ExampleRows
from .intent_model import IntentModel
from .lexical_model import LexicalFeatures, LexicalModel
from .token_views import SifWeights, TokenViewModel, _Regression

log = logging.getLogger("intent_router.routing.model_files")

# 2: the centred descriptions are stored (an edit after a restart refits only what changed from them);
# 3: the examples' raw vectors instead of centred ones (the model scores from raw dots: example_rows.py).
# A file of another format is ignored and the model refitted (never read as this one).
FORMAT = "intent-router-fitted/3"
KEEP_FILES = 8  # per kind: the most recently used files survive, older ones are deleted


@functools.cache
def code_version() -> str:
    """Digest of the modules whose code decides what a fit produces: a change there means a refit."""
    from . import acceptance, intent_model, lexical_model, token_views, warm_start

    digest = hashlib.sha256(FORMAT.encode())
    for module in (intent_model, lexical_model, warm_start, token_views, acceptance):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def model_path(directory: Path, key: str) -> Path:
    return directory / f"intent-{_name(key)}.npz"


def acceptance_path(directory: Path, key: str) -> Path:
    return directory / f"acceptance-{_name(key)}.npz"


def _name(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:32]


# --- intent model -------------------------------------------------------------------------------


def save_model(directory: Path, key: str, model: IntentModel) -> Path | None:
    """Write the model (None when its keys are not plain strings or tuples of strings: not storable)."""
    keys = _keys_json(model.keys)
    if keys is None or model.desc is None:
        return None
    arrays: dict[str, np.ndarray] = {
        "mu": model.mu,
        "examples": model.examples.rows(),
        "norms": model.norms,
        "centred_mu": model.centred_mu,
        "starts": model.starts,
        "counts": model.counts,
        "w": model.w,
        "b": model.b,
        "desc": model.desc,
    }
    meta: dict[str, Any] = {"kind": "intent_model", "keys": keys, "lexical_weight": model.lexical_weight}
    if model.lexical is not None:
        features = model.lexical.features
        names = sorted(features.vocabulary, key=features.vocabulary.__getitem__)
        arrays |= {
            "lexical_vocabulary": np.array(names, dtype=str),
            "lexical_idf": features.idf,
            "lexical_w": model.lexical.w,
            "lexical_b": model.lexical.b,
        }
        meta["lexical_max_features"] = features.max_features
    if model.views is not None:
        v = model.views
        arrays |= {
            "views_sif_vocabulary": v.sif_weights.vocabulary,
            "views_sif_probability": v.sif_weights.probability,
            "views_sif_mu": v.sif.mu,
            "views_sif_w": v.sif.w,
            "views_sif_b": v.sif.b,
            "views_max_mu": v.maxed.mu,
            "views_max_w": v.maxed.w,
            "views_max_b": v.maxed.b,
            "views_sif_examples": v.sif_examples,
            "views_starts": v.starts,
        }
    path = model_path(directory, key)
    _write(path, key, meta, arrays)
    _prune(directory, "intent-")
    return path


def load_model(directory: Path, key: str) -> IntentModel | None:
    """The model stored for `key`, or None (absent, unreadable, another key or format)."""
    found = _read(model_path(directory, key), key, "intent_model")
    if found is None:
        return None
    meta, a = found
    try:
        keys = [tuple(k) if isinstance(k, list) else k for k in meta["keys"]]
        lexical = None
        if "lexical_w" in a:
            features = LexicalFeatures(int(meta["lexical_max_features"]))
            features.vocabulary = {str(name): i for i, name in enumerate(a["lexical_vocabulary"].tolist())}
            features.idf = a["lexical_idf"]
            lexical = LexicalModel(features, a["lexical_w"], a["lexical_b"])
        model = IntentModel(
            keys,
            a["mu"],
            ExampleRows.loaded(a["examples"]),
            a["norms"],
            a["centred_mu"],
            a["starts"],
            a["counts"],
            a["w"],
            a["b"],
            lexical,
            float(meta["lexical_weight"]),
            desc=a["desc"],
        )
        if "views_sif_w" in a:
            model.views = TokenViewModel(
                SifWeights(a["views_sif_vocabulary"], a["views_sif_probability"]),
                _Regression(a["views_sif_mu"], a["views_sif_w"], a["views_sif_b"]),
                _Regression(a["views_max_mu"], a["views_max_w"], a["views_max_b"]),
                a["views_sif_examples"],
                a["views_starts"],
            )
        _check_model(model)
    except (KeyError, ValueError, TypeError) as exc:
        log.warning("ignoring fitted model file for %s: %s", key[:12], exc)
        return None
    return model


def _check_model(m: IntentModel) -> None:
    """Shapes that must agree; a file that passes the header check but not this is not used."""
    t, n = len(m.keys), len(m.examples)
    if len(set(m.keys)) != t or m.counts.shape != (t,) or m.starts.shape != (t,) or int(m.counts.sum()) != n:
        raise ValueError("template counts do not match the stored keys")
    if m.norms.shape != (n,) or m.centred_mu.shape != (n,) or m.w.shape != (m.mu.shape[0], t) or m.b.shape != (t,):
        raise ValueError("array shapes do not match")
    d = m.mu.shape[0]
    if any(matrix.shape[1] != d for matrix in m.examples.matrices):
        raise ValueError("example vectors do not match the centre's dimension")
    if m.desc is None or m.desc.shape != (t, d):
        raise ValueError("description rows do not match")
    if m.lexical is not None and m.lexical.w.shape != (m.lexical.features.size, t):
        raise ValueError("lexical shapes do not match")
    if m.views is not None and m.views.starts.shape != (t,):
        raise ValueError("token view shapes do not match")


# --- acceptance ---------------------------------------------------------------------------------


def save_acceptance(directory: Path, key: str, acceptance: Acceptance) -> Path:
    m = acceptance.model
    arrays = {"cohesion": acceptance.profile.cohesion, "mean": m.mean, "scale": m.scale, "w": m.w}
    meta = {
        "kind": "acceptance",
        "b": m.b,
        "default_threshold": m.default_threshold,
        "model_expectation": m.expectation.__dict__,
        "out_of_scope_share": m.out_of_scope_share,
        "threshold": acceptance.threshold,
        "expectation": acceptance.expectation.__dict__,
        "simulated": acceptance.simulated,
        "templates": len(acceptance.intent_model.keys),
    }
    path = acceptance_path(directory, key)
    _write(path, key, meta, arrays)
    _prune(directory, "acceptance-")
    return path


def load_acceptance(directory: Path, key: str, intent_model: IntentModel) -> Acceptance | None:
    """The acceptance test stored for `key`, attached to `intent_model` (the one it was fitted on)."""
    found = _read(acceptance_path(directory, key), key, "acceptance")
    if found is None:
        return None
    meta, a = found
    try:
        if int(meta["templates"]) != len(intent_model.keys) or a["cohesion"].shape != (len(intent_model.keys),):
            raise ValueError("stored for another number of templates")
        model = AcceptanceModel(
            a["mean"],
            a["scale"],
            a["w"],
            float(meta["b"]),
            float(meta["default_threshold"]),
            Expectation(**meta["model_expectation"]),
            float(meta["out_of_scope_share"]),
        )
        return Acceptance(
            intent_model,
            TemplateProfile(a["cohesion"]),
            model,
            float(meta["threshold"]),
            Expectation(**meta["expectation"]),
            int(meta["simulated"]),
            {k: i for i, k in enumerate(intent_model.keys)},
        )
    except (KeyError, ValueError, TypeError) as exc:
        log.warning("ignoring acceptance file for %s: %s", key[:12], exc)
        return None


# --- files --------------------------------------------------------------------------------------


def _keys_json(keys: list[Hashable]) -> list[Any] | None:
    out: list[Any] = []
    for k in keys:
        if isinstance(k, str):
            out.append(k)
        elif isinstance(k, tuple) and all(isinstance(p, str) for p in k):
            out.append(list(k))
        else:
            return None
    return out


def _write(path: Path, key: str, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Temporary file in the same directory, fsync, rename over the target (atomic on POSIX)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = json.dumps({"format": FORMAT, "key": key, **meta}).encode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, allow_pickle=False, meta=np.frombuffer(header, np.uint8), **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read(path: Path, key: str, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode())
            if meta.get("format") != FORMAT or meta.get("key") != key or meta.get("kind") != kind:
                log.warning("ignoring %s: written for another fingerprint or format", path.name)
                return None
            arrays = {name: data[name] for name in data.files if name != "meta"}
        os.utime(path)  # most recently used: survives pruning
        return meta, arrays
    except Exception as exc:  # truncated, not a zip, bad JSON: refit and overwrite
        log.warning("ignoring unreadable fitted model file %s: %s", path.name, exc)
        return None


def _prune(directory: Path, prefix: str) -> None:
    """Keep the KEEP_FILES most recently used files of a kind (another process may be pruning too)."""
    dated = []
    for p in directory.glob(f"{prefix}*.npz"):
        try:
            dated.append((p.stat().st_mtime, p))
        except OSError:
            continue
    for _, old in sorted(dated, reverse=True)[KEEP_FILES:]:
        old.unlink(missing_ok=True)
