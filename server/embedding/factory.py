"""Build the configured embedder. Local models are loaded once per process and shared."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path

from server.embedding.base import Embedder, EmbeddingError
from server.embedding.cache import CachedEmbedder
from server.embedding.lanes import resolve_lanes
from server.embedding.minilm import MODEL_ID, MiniLMEmbedder, MiniLMModel
from server.embedding.model_folder import ModelFolder, bundled_folder, read_folder
from server.embedding.openai_compatible import OpenAICompatibleEmbedder
from server.embedding.settings import EmbeddingSettings
from server.embedding.shared_cache import SharedEmbeddings

log = logging.getLogger(__name__)

# Loaded local models: the bundled one under MODEL_ID, another by its folder and its weights' size and mtime
# (a re-tuned folder loads anew). The peer reloaded its model per question; we never do.
_MODELS: dict[str, MiniLMModel] = {}
_MODELS_LOCK = threading.Lock()


def resolve_path(path: str, base_dir: Path) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else base_dir / p


def graph_dir_for(settings: EmbeddingSettings, base_dir: Path) -> Path:
    """Derived model files live in `models/` next to the embedding cache file."""
    return resolve_path(settings.cache.path, base_dir).parent / "models"


def model_folder(settings: EmbeddingSettings, base_dir: Path) -> ModelFolder:
    """The local model folder the settings name: `model_path`, else the bundled all-MiniLM-L6-v2."""
    if settings.model_path is None:
        return bundled_folder()
    return read_folder(resolve_path(settings.model_path, base_dir))


def _folder_key(folder: ModelFolder) -> str:
    if folder.bundled:
        return MODEL_ID
    st = folder.weights.stat()
    return f"folder:{folder.root.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def settings_key(settings: EmbeddingSettings, base_dir: Path) -> str:
    """Equal for settings that give the same embedder: the same settings, and for a model folder the same
    weights file (a folder re-tuned in place is a new model: a reload builds a new embedder for it)."""
    key = f"{base_dir}\x00{settings.model_dump_json()}"
    if settings.provider == "minilm" and settings.model_path is not None:
        with contextlib.suppress(EmbeddingError, OSError):  # a missing folder fails in build_embedder
            key += f"\x00{_folder_key(model_folder(settings, base_dir))}"
    return key


def shared_minilm(graph_dir: Path | None, folder: ModelFolder | None = None) -> MiniLMModel:
    """The process-wide model of `folder` (default: the bundled one), loaded on first use."""
    folder = folder or bundled_folder()
    key = _folder_key(folder)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = _MODELS[key] = MiniLMModel(graph_dir, folder=folder)
        return model


def use_encoder_lanes(setting: int | None, embedders: Iterable[Embedder], lane_floor: int = 1) -> None:
    """Apply `server.encoder_lanes` (and `server.encoder_lane_min_questions`, `lane_floor`) to the
    process-wide local model when the serving config uses it (no lanes when it no longer does). Called by
    the server at start and at every reload, not by one-shot commands; new lanes open in the background
    while the main session serves."""
    used = {e.model_id for e in embedders}
    with _MODELS_LOCK:
        models = list(_MODELS.values())
    for model in models:
        count = resolve_lanes(setting) if model.model_id in used else 0
        model.set_lanes(count, lane_floor).add_done_callback(_report_lanes)


def _report_lanes(done: Future[int]) -> None:
    if done.exception() is not None:
        log.error("encoder lanes not changed: %s", done.exception())


def preload(settings: EmbeddingSettings, base_dir: Path) -> None:
    """Load the process-wide local model now, on a worker thread while the templates are still being read at
    start: the session's loading runs mostly outside the GIL, so the two overlap on a 2-core box. A failure is
    left for `build_embedder` to raise the same way, with the config's other errors first."""
    if settings.provider != "minilm":
        return
    with contextlib.suppress(Exception):  # build_embedder tries again and reports it
        shared_minilm(graph_dir_for(settings, base_dir), model_folder(settings, base_dir))


def build_provider(settings: EmbeddingSettings, base_dir: Path) -> Embedder:
    """The bare provider, without the cache."""
    if settings.provider == "minilm":
        model = shared_minilm(graph_dir_for(settings, base_dir), model_folder(settings, base_dir))
        return MiniLMEmbedder(model, batch_size=settings.batch_size)
    api_key = None
    if settings.api_key_env:
        api_key = os.environ.get(settings.api_key_env)
        if not api_key:
            raise EmbeddingError(f"environment variable {settings.api_key_env} (embedding API key) is not set")
    assert settings.base_url is not None  # guaranteed by EmbeddingSettings' validator
    return OpenAICompatibleEmbedder(
        settings.base_url,
        settings.model,
        api_key=api_key,
        timeout=settings.timeout,
        batch_size=settings.batch_size,
        retries=settings.retries,
    )


def build_embedder(settings: EmbeddingSettings, base_dir: Path) -> Embedder:
    """The provider, wrapped in the persistent cache when enabled (relative paths from base_dir)."""
    provider = build_provider(settings, base_dir)
    if not settings.cache.enabled:
        return provider
    shared = settings.cache.shared
    return CachedEmbedder(
        provider,
        resolve_path(settings.cache.path, base_dir),
        memory_bytes=settings.cache.memory_max_bytes,
        shared=SharedEmbeddings(shared) if shared is not None else None,
    )
