"""What a cluster bus does, whichever engine carries it (Redis or PostgreSQL).

A bus carries reload announcements (every replica hears every other one), keeps the latest
announcement (a replica that was cut off catches up when it reconnects) and the replicas' heartbeats
(each expires when its replica stops beating). Engine errors surface as `BusUnavailable`; the member
(server/cluster/member.py) turns them into a degraded /health, never into a failed request.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any


class BusUnavailable(Exception):
    """The shared engine did not answer (down, unreachable, refused)."""


@dataclass(frozen=True)
class Announcement:
    """A reload one replica accepted: the others reload from their own files and compare hashes."""

    instance: str  # unique per process (names may repeat), so a replica ignores its own announcements
    replica: str
    config_hash: str
    generation: int
    at: float

    def to_text(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str | bytes) -> Announcement | None:
        try:
            data = json.loads(text)
            return cls(
                instance=str(data["instance"]),
                replica=str(data["replica"]),
                config_hash=str(data["config_hash"]),
                generation=int(data["generation"]),
                at=float(data["at"]),
            )
        except (ValueError, KeyError, TypeError):
            return None  # not ours or garbled: ignored


class ClusterBus(ABC):
    backend: str

    @abstractmethod
    async def announce(self, announcement: Announcement) -> None:
        """Publish to every replica and keep it as the latest announcement."""

    @abstractmethod
    async def latest(self) -> Announcement | None:
        """The latest announcement kept by the engine (None when there has been none)."""

    @abstractmethod
    def announcements(self) -> AsyncIterator[Announcement]:
        """Announcements as they arrive; raises BusUnavailable when the connection is lost."""

    @abstractmethod
    async def beat(self, instance: str, record: dict[str, Any], ttl_seconds: float) -> None:
        """Record this replica (by its process's instance id: names may repeat) as alive for ttl_seconds."""

    @abstractmethod
    async def replicas(self) -> list[dict[str, Any]]:
        """Heartbeat records of the replicas seen within their TTL."""

    @abstractmethod
    async def close(self) -> None: ...
