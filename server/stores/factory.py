"""Store settings and construction: `memory` (exact, default) or embedded persistent `chroma`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import TemplateStore


class StoreSettings(BaseModel):
    """The `store:` block: where template vectors are searched."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["memory", "chroma"] = Field(
        "memory", description="`memory`: exact numpy search in the process; `chroma`: an embedded, persistent ChromaDB"
    )
    path: str = Field("data/chroma", description="chroma only: its directory (relative to the project root)")


def build_store(settings: StoreSettings, adapter: str, root: Path) -> TemplateStore:
    if settings.backend == "chroma":
        from .chroma import ChromaTemplateStore

        path = Path(settings.path)
        return ChromaTemplateStore(path if path.is_absolute() else root / path, adapter)
    from .memory import MemoryTemplateStore

    return MemoryTemplateStore(f"{adapter}_intent_templates")
