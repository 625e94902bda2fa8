"""Store settings and construction: `memory` (exact, default) or embedded persistent `chroma`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .base import TemplateStore


class StoreSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["memory", "chroma"] = "memory"
    path: str = "data/chroma"  # chroma only; relative to the project root


def build_store(settings: StoreSettings, adapter: str, root: Path) -> TemplateStore:
    if settings.backend == "chroma":
        from .chroma import ChromaTemplateStore

        path = Path(settings.path)
        return ChromaTemplateStore(path if path.is_absolute() else root / path, adapter)
    from .memory import MemoryTemplateStore

    return MemoryTemplateStore(f"{adapter}_intent_templates")
