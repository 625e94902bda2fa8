"""Config warnings about local model folders: a tuned encoder whose templates changed since it was tuned
(still served; `validate`, the start and every reload report it, so /health shows it)."""

from __future__ import annotations

from ..adapters.base import DataAdapterSettings
from ..embedding.factory import resolve_path
from ..embedding.tuned_manifest import staleness
from .loader import LoadedConfig


def encoder_warnings(config: LoadedConfig) -> list[str]:
    own = [a.embedding for a in config.adapters if isinstance(a, DataAdapterSettings) and a.embedding is not None]
    paths = {
        resolve_path(e.model_path, config.root)
        for e in [config.app.embedding, *own]
        if e.provider == "minilm" and e.model_path is not None
    }
    return [reason for path in sorted(paths) if (reason := staleness(path, config.templates)) is not None]
