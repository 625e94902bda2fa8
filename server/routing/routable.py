"""What a question can be asked of: a data source on its own (`RoutingSource`, below: a DataAdapter with
the embedder and template store its templates are searched in and the extractor that fills their
parameters; the runtime builds one around each data adapter, which itself only executes) or a composite
over several (routing/composite.py). The service routes through this interface and nothing else, so data
adapters (server/adapters) need not know how a question reaches them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..adapters.base import AdapterSettings, DataAdapter, DataAdapterSettings
from ..bulkhead import SEARCH_POOL, run_on
from ..embedding.base import Embedder
from ..intent.calibration import ScoreCalibration
from ..params.base import ParameterExtractor
from ..stores.base import StoreHit, TemplateStore
from ..stores.group_search import GroupSearch
from ..templates import Template
from .batches import RoutingBatches
from .policy import RoutingPolicy
from .stages.base import ScoringStage


class Routable(ABC):
    """A name a request may ask, the data sources its questions may route to and how they are routed."""

    settings: AdapterSettings

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    @abstractmethod
    def type_name(self) -> str:
        """The adapter type asked (`sql`, `composite`, ...)."""

    @abstractmethod
    def routing_sources(self) -> list[RoutingSource]:
        """The data sources whose templates a question asked here may route to."""

    @abstractmethod
    def routing_policy(self) -> RoutingPolicy:
        """Threshold, candidates per source, search and ambiguity settings for questions asked here."""

    def score_calibrations(self) -> Mapping[str, ScoreCalibration]:
        """Per embedding model, the map of its cosines to the common scale (a composite of mixed models)."""
        return {}

    def routing_stages(self) -> Sequence[ScoringStage]:
        """Scoring stages after the embedding search (none for a data source asked directly)."""
        return ()

    def group_search(self) -> GroupSearch | None:
        """How the routing sources' stores are searched together (a composite's stacked view); None:
        each on its own."""
        return None

    def routing_batches(self) -> RoutingBatches | None:
        """Where concurrent questions are routed together (a composite's, routing/batches.py); None: each
        question on its own."""
        return None

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Statistics (templates counted as templates, not vectors)."""

    @abstractmethod
    async def start(self) -> None:
        """Get ready to serve (open the source, fit models)."""

    @abstractmethod
    async def close(self) -> None:
        """Release whatever `start` opened."""

    @abstractmethod
    async def health(self) -> dict[str, Any]:
        """Cheap liveness: {'status': 'ok'|'down', 'reason'?: str}."""


class RoutingSource(Routable):
    """A data adapter's templates made routable: searched in `store` with vectors of `embedder`, their
    parameters filled by `extractor`; `adapter` runs the chosen one."""

    def __init__(
        self,
        adapter: DataAdapter,
        embedder: Embedder | None = None,
        store: TemplateStore | None = None,
        extractor: ParameterExtractor | None = None,
    ) -> None:
        self.adapter = adapter
        self.settings = adapter.settings
        self._embedder = embedder
        self._store = store
        self._extractor = extractor
        if extractor is not None:
            extractor.bind_values_source(adapter)  # values_from lists run on this adapter's source

    @property
    def type_name(self) -> str:
        return self.adapter.type_name

    @property
    def templates(self) -> dict[str, Template]:
        return self.adapter.templates

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            raise RuntimeError(f"adapter {self.name} has no embedder")
        return self._embedder

    @property
    def store(self) -> TemplateStore:
        if self._store is None:
            raise RuntimeError(f"adapter {self.name} has no template store")
        return self._store

    @property
    def has_extractor(self) -> bool:
        return self._extractor is not None

    @property
    def extractor(self) -> ParameterExtractor:
        if self._extractor is None:
            raise RuntimeError(f"adapter {self.name} has no parameter extractor")
        return self._extractor

    # --- search ---------------------------------------------------------------------------
    async def search_templates(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        return await run_on(SEARCH_POOL, self.store.search, vector, k)

    @property
    def searches_inline(self) -> bool:
        """True when a search is pure in-process arithmetic (the in-memory store, search not overridden):
        the router then calls `search_inline` in place instead of paying a task and a timeout per child."""
        return (
            self._store is not None
            and not self._store.blocking
            and type(self).search_templates is RoutingSource.search_templates
        )

    def search_inline(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        return self.store.search(vector, k)

    # --- routing --------------------------------------------------------------------------
    def routing_sources(self) -> list[RoutingSource]:
        return [self]

    def routing_policy(self) -> RoutingPolicy:
        s = self.settings
        assert isinstance(s, DataAdapterSettings)
        return RoutingPolicy(confidence_threshold=s.confidence_threshold, max_templates_per_source=s.max_templates)

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        await self.adapter.start()

    async def close(self) -> None:
        """Release the source's pools / clients, then the extractor's."""
        await self.adapter.close()
        if self._extractor is not None:
            await self._extractor.close()

    async def health(self) -> dict[str, Any]:
        """The adapter's health, with what its parameter extraction runs with."""
        found = await self.adapter.health()
        extraction = self._extractor.status() if self._extractor is not None else {}
        return {**found, "parameter_extraction": extraction} if extraction else found

    def describe(self) -> dict[str, Any]:
        info = self.adapter.describe()
        if self._store is None:
            return info
        stored = {"total_templates": len(self.templates), "collection_name": self.store.collection_name}
        return {"type": info["type"], **stored, **info}
