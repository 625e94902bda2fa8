"""The template store interface: index vectors per template, search for the k best distinct templates."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StoreHit:
    """One template's best match: its score is the best cosine over all its vectors."""

    template_id: str
    score: float
    matched_text: str


class TemplateStore(ABC):
    """Vectors of one adapter's templates. Implementations must be safe to search from threads."""

    collection_name: str
    # False for stores whose search is pure in-process arithmetic (microseconds to a few ms): the
    # adapter then searches inline instead of paying a thread hop per child per question.
    blocking: bool = True

    @abstractmethod
    def template_hashes(self) -> dict[str, str]:
        """template id -> content hash of what was embedded (drives incremental re-indexing)."""

    @abstractmethod
    def upsert(self, template_id: str, content_hash: str, texts: list[str], vectors: np.ndarray) -> None:
        """Replace all vectors of one template."""

    @abstractmethod
    def delete(self, template_ids: list[str]) -> None: ...

    @abstractmethod
    def search(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        """The k best distinct templates, best first (scores are cosine similarities)."""

    def count_templates(self) -> int:
        return len(self.template_hashes())

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (file handles, clients)."""
