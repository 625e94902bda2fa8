"""Fitted extractor models by the fingerprint of their training set: memory first, then a directory, so
that a reload or a restart with unchanged annotations loads the model instead of fitting it again."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from ...recent import Recent
from .tagger import SequenceModel

log = logging.getLogger("intent_router.params.learned")


class LearnedModels:
    """Shared by every adapter of a runtime and carried across reloads (server/runtime/build.py)."""

    def __init__(self, size: int = 16) -> None:
        self._models: Recent[str, SequenceModel] = Recent(size)
        self._latest: dict[str, dict[str, SequenceModel]] = {}  # adapter -> its models by template (stand-ins)

    def find(self, key: str, directory: Path | None) -> tuple[SequenceModel | None, str | None]:
        """The model fitted for `key` and where it came from ('memory' or 'disk'), or (None, None)."""
        model = self._models.get(key)
        if model is not None:
            return model, "memory"
        if directory is None:
            return None, None
        path = _path(directory, key)
        try:
            data = path.read_bytes()
        except OSError:
            return None, None
        try:
            model = SequenceModel(data)
        except Exception as exc:  # a damaged file is refitted, not fatal
            log.warning("learned extractor file %s cannot be read (%s); fitting again", path, exc)
            return None, None
        self._models.put(key, model)
        return model, "disk"

    def put(self, key: str, model: SequenceModel, directory: Path | None) -> None:
        self._models.put(key, model)
        if directory is None:
            return
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(model.data)
            os.replace(tmp, _path(directory, key))
        except OSError as exc:  # a read-only disk costs a refit at the next start, nothing more
            log.warning("learned extractor not saved to %s: %s", directory, exc)

    def remember(self, owner: str, models: dict[str, SequenceModel]) -> None:
        self._latest[owner] = models

    def previous(self, owner: str) -> dict[str, SequenceModel] | None:
        """The models the adapter last used, by template id: stand-ins while a reload's refit runs."""
        return self._latest.get(owner)


def _path(directory: Path, key: str) -> Path:
    return directory / f"extractor-{key}.crfsuite"
