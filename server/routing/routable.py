"""What a question can be asked of: a data source on its own (routing/source.py) or a composite over
several (routing/composite.py). The service routes through this interface and nothing else, so data
adapters (server/adapters) need not know how a question reaches them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..adapters.base import AdapterSettings
from ..intent.calibration import ScoreCalibration
from ..stores.group_search import GroupSearch
from .policy import RoutingPolicy
from .stages.base import ScoringStage

if TYPE_CHECKING:
    from .source import RoutingSource


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
