"""This replica's part in a cluster: announce the reloads it accepts, reload when another replica
announces one, compare config hashes, beat its heartbeat, and say in /health when something is off.

Nothing here is on a request's path: when the bus engine is down the replica keeps serving its own
config, /health says `degraded` (logged once), and when the engine returns the replica catches up with
the latest announcement it missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import Any

from ..api.health import Health
from ..cluster_settings import ClusterSettings
from ..runtime.holder import LoadStatus, RuntimeHolder
from .bus import Announcement, BusUnavailable, ClusterBus

log = logging.getLogger("intent_router.cluster")


class ClusterMember:
    def __init__(self, holder: RuntimeHolder, settings: ClusterSettings, bus: ClusterBus) -> None:
        self.holder = holder
        self.settings = settings
        self.bus = bus
        self.name = settings.name()
        self.instance = uuid.uuid4().hex
        self.started_at = time.time()
        self.served = 0  # questions answered (query and test_routing), for /v1/cluster's load figures
        self.latest: Announcement | None = None  # the newest announcement heard or sent
        self.mismatch: dict[str, Any] | None = None  # set while this replica serves another hash than announced
        self._failures: dict[str, str] = {}  # loop -> reason, while the engine fails for it
        self._unsent: Announcement | None = None  # an announcement the engine did not take: sent on recovery
        self._tasks: list[asyncio.Task] = []
        self._pending: set[asyncio.Task] = set()
        self._handling = asyncio.Lock()
        self._beat_now = asyncio.Event()  # a reload changed what the heartbeat says: beat without waiting

    # --- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        self.holder.load_listeners.append(self._on_load)
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._listen(), name="cluster-listen"),
            loop.create_task(self._heartbeats(), name="cluster-heartbeat"),
        ]
        log.info("cluster member %s (%s bus), config %s", self.name, self.bus.backend, self.holder.config_hash)

    async def stop(self) -> None:
        with contextlib.suppress(ValueError):
            self.holder.load_listeners.remove(self._on_load)
        for task in [*self._tasks, *self._pending]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._pending, return_exceptions=True)
        self._tasks = []
        await self.bus.close()

    # --- health ------------------------------------------------------------------------------------
    @property
    def problems(self) -> list[str]:
        found = [f"cluster bus ({self.bus.backend}) unreachable: {reason}" for reason in self._failures.values()][:1]
        if self.mismatch is not None:
            found.append(
                f"config differs from the cluster: replica {self.mismatch['announced_by']} announced "
                f"{self.mismatch['announced_hash']}, this replica's files hash to {self.mismatch['serving_hash']}"
            )
        return found

    def health(self) -> dict[str, Any]:
        problems = self.problems
        return {
            "status": Health.DEGRADED if problems else Health.OK,
            "replica": self.name,
            "backend": self.bus.backend,
            "bus": Health.DOWN if self._failures else Health.OK,
            "problems": problems,
            "latest_announcement": None
            if self.latest is None
            else {"replica": self.latest.replica, "config_hash": self.latest.config_hash, "at": self.latest.at},
        }

    def record(self) -> dict[str, Any]:
        """This replica's heartbeat: what /v1/cluster lists."""
        now = time.time()
        return {
            "name": self.name,
            "instance": self.instance,
            "config_hash": self.holder.config_hash,
            "generation": self.holder.generation,
            "started_at": self.started_at,
            "uptime_seconds": round(now - self.started_at, 1),
            "in_flight": self.holder.in_flight,
            "served": self.served,
            "status": Health.DEGRADED if self.problems else Health.OK,
            "seen_at": now,
        }

    # --- announcing ----------------------------------------------------------------------------------
    def _on_load(self, status: LoadStatus) -> None:
        """A load listener (synchronous): announce what an operator or the file watcher reloaded here."""
        if not status.ok or status.trigger not in ("admin", "watch") or status.config_hash is None:
            return
        if status.trigger == "watch" and status.changes.get("unchanged"):
            return  # an admin reload is announced even when unchanged here: it asks every replica to look
        announcement = Announcement(self.instance, self.name, status.config_hash, status.generation, time.time())
        self.latest = announcement
        self._compare()
        self._beat_now.set()
        task = asyncio.get_running_loop().create_task(self._announce(announcement))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _announce(self, announcement: Announcement) -> None:
        try:
            await self.bus.announce(announcement)
        except BusUnavailable as exc:
            self._unsent = announcement
            self._failed("announce", str(exc))
            return
        if self._unsent is not None and self._unsent.at <= announcement.at:
            self._unsent = None
        self._recovered("announce")
        log.info("announced config %s to the cluster", announcement.config_hash)

    # --- hearing ---------------------------------------------------------------------------------------
    async def _listen(self) -> None:
        while True:
            try:
                await self._catch_up()
                self._recovered("listen")
                async for announcement in self.bus.announcements():
                    await self._handle(announcement)
            except BusUnavailable as exc:
                self._failed("listen", str(exc))
            await asyncio.sleep(min(1.0, self.settings.heartbeat_seconds))

    async def _catch_up(self) -> None:
        """The latest announcement made since this replica started that it has not acted on (missed
        while the engine was unreachable). Older ones are not: a replica started with newer files must
        not be told its config is stale."""
        latest = await self.bus.latest()
        unsent = self._unsent
        if unsent is not None:  # announce what was reloaded here during the outage, unless something newer was
            if latest is None or latest.at < unsent.at:
                await self.bus.announce(unsent)
                log.info("announced config %s to the cluster (after the outage)", unsent.config_hash)
            self._unsent = None
            self._recovered("announce")
            return
        if latest is None or latest.at < self.started_at:
            return
        if self.latest is not None and latest.at <= self.latest.at:
            return
        await self._handle(latest)

    async def _handle(self, announcement: Announcement) -> None:
        if announcement.instance == self.instance:
            return
        async with self._handling:
            log.info("replica %s announced config %s: reloading", announcement.replica, announcement.config_hash)
            self.latest = announcement
            await self.holder.reload(trigger="cluster")
            self._compare()
            self._beat_now.set()

    def _compare(self) -> None:
        """Degraded while this replica serves another config than the latest announced one."""
        latest, mine = self.latest, self.holder.config_hash
        if latest is None or latest.config_hash == mine:
            if self.mismatch is not None:
                log.info("config matches the cluster again (%s)", mine)
            self.mismatch = None
            return
        mismatch = {"announced_by": latest.replica, "announced_hash": latest.config_hash, "serving_hash": mine}
        if mismatch != self.mismatch:
            log.warning(
                "config differs from the cluster: %s announced %s, this replica's files hash to %s",
                latest.replica,
                latest.config_hash,
                mine,
            )
        self.mismatch = mismatch

    # --- heartbeats --------------------------------------------------------------------------------------
    async def _heartbeats(self) -> None:
        every = self.settings.heartbeat_seconds
        while True:
            try:
                await self.bus.beat(self.instance, self.record(), ttl_seconds=3 * every)
            except BusUnavailable as exc:
                self._failed("heartbeat", str(exc))
            else:
                self._recovered("heartbeat")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._beat_now.wait(), every)
            self._beat_now.clear()

    async def replicas(self) -> list[dict[str, Any]]:
        """Replicas seen within three heartbeats (this one always, even with the bus down)."""
        try:
            found = await self.bus.replicas()
        except BusUnavailable:
            found = []  # the heartbeat loop reports the outage
        others = [r for r in found if r.get("instance") != self.instance]
        return sorted([self.record(), *others], key=lambda r: (str(r.get("name")), str(r.get("instance"))))

    # --- engine state (logged once per outage) ------------------------------------------------------------
    def _failed(self, what: str, reason: str) -> None:
        if not self._failures:
            log.warning(
                "cluster bus (%s) unreachable (%s); serving local state until it returns", self.bus.backend, reason
            )
        self._failures[what] = reason

    def _recovered(self, what: str) -> None:
        if self._failures.pop(what, None) is not None and not self._failures:
            log.info("cluster bus (%s) reachable again", self.bus.backend)
