"""The manifest `tune-encoder` writes into a tuned model folder, and whether it is stale.

A tuned encoder learnt the templates it was tuned on; once they change (a template added, an
example edited) it still serves, but its vectors no longer reflect the config. The manifest holds
the templates' content hash, so `validate`, the start and every reload (and so /health) can say
so. No JAX here: the server reads manifests without the training runtime installed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from server.embedding.model_folder import MANIFEST
from server.templates import Template

FORMAT = "intent-router-tuned-encoder/1"


def templates_hash(templates: Mapping[str, Iterable[Template]]) -> str:
    """Content hash of every adapter's templates (id and embedded texts), independent of order."""
    rows = sorted(f"{adapter}\x00{t.id}\x00{t.content_hash()}" for adapter, ts in templates.items() for t in ts)
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()[:32]


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's tune manifest, or None for a folder tune-encoder did not write (or a broken one)."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    (folder / MANIFEST).write_text(json.dumps({"format": FORMAT, **manifest}, indent=2) + "\n", encoding="utf-8")


def stale_against(folder: Path, digest: str) -> str | None:
    """The templates hash a tuned folder was tuned on, when it is not `digest` (None: it matches, or the
    folder is not one tune-encoder wrote: such a folder is never reported stale, nor tuned again)."""
    manifest = read_manifest(folder)
    if manifest is None:
        return None
    tuned = manifest.get("templates_hash")
    return None if tuned == digest else str(tuned)


def staleness(folder: Path, templates: Mapping[str, Iterable[Template]]) -> str | None:
    """Why the tuned folder no longer matches `templates` (None: it matches, or it is not a tuned folder)."""
    current = templates_hash(templates)
    tuned = stale_against(folder, current)
    if tuned is None:
        return None
    return (
        f"tuned encoder {folder} is stale: it was tuned on templates with hash {tuned}, "
        f"the config's templates now hash {current}; it is still served; run `run.py tune-encoder` again"
    )
