"""The cluster bus on Redis: pub/sub for announcements, one key for the latest, one key per heartbeat (with
the heartbeat's TTL as its expiry, so a replica that stops simply disappears)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from redis import asyncio as aioredis
from redis.exceptions import RedisError

from .bus import Announcement, BusUnavailable, ClusterBus


class RedisBus(ClusterBus):
    backend = "redis"

    def __init__(self, url: str, prefix: str) -> None:
        options: dict[str, Any] = {"socket_connect_timeout": 1.0, "decode_responses": True}
        self._client = aioredis.from_url(url, socket_timeout=2.0, **options)
        self._listener = aioredis.from_url(url, **options)  # pub/sub waits for messages: no read timeout
        self._channel = prefix + "reload"
        self._latest_key = prefix + "latest"
        self._replica_prefix = prefix + "replica:"

    async def announce(self, announcement: Announcement) -> None:
        text = announcement.to_text()
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(self._latest_key, text)
                pipe.publish(self._channel, text)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            raise BusUnavailable(f"redis: {type(exc).__name__}") from None

    async def latest(self) -> Announcement | None:
        try:
            text = await self._client.get(self._latest_key)
        except (RedisError, OSError) as exc:
            raise BusUnavailable(f"redis: {type(exc).__name__}") from None
        return Announcement.from_text(text) if text else None

    async def announcements(self) -> AsyncIterator[Announcement]:
        pubsub = self._listener.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(self._channel)
            while True:
                message = await pubsub.get_message(timeout=1.0)
                if message is None or message.get("type") != "message":
                    continue
                announcement = Announcement.from_text(message["data"])
                if announcement is not None:
                    yield announcement
        except (RedisError, OSError) as exc:
            raise BusUnavailable(f"redis: {type(exc).__name__}") from None
        finally:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()

    async def beat(self, instance: str, record: dict[str, Any], ttl_seconds: float) -> None:
        try:
            await self._client.set(
                self._replica_prefix + instance, json.dumps(record), px=max(1, round(ttl_seconds * 1000))
            )
        except (RedisError, OSError) as exc:
            raise BusUnavailable(f"redis: {type(exc).__name__}") from None

    async def replicas(self) -> list[dict[str, Any]]:
        try:
            keys = [k async for k in self._client.scan_iter(match=self._replica_prefix + "*", count=500)]
            values = await self._client.mget(keys) if keys else []
        except (RedisError, OSError) as exc:
            raise BusUnavailable(f"redis: {type(exc).__name__}") from None
        found = []
        for value in values:
            try:
                record = json.loads(value) if value else None
            except ValueError:
                record = None
            if isinstance(record, dict):
                found.append(record)
        return found

    async def close(self) -> None:
        for client in (self._client, self._listener):
            with contextlib.suppress(RedisError, OSError):
                await client.aclose()
