"""`GET /v1/cluster` (admin key) and the cluster member's life with the app (started when cluster.enabled)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from ..api.responses import ClusterResponse, ReplicaView
from ..auth import Role, authenticate, require
from ..cluster.factory import build_member
from ..cluster.member import ClusterMember
from ..runtime.holder import RuntimeHolder
from ..service.observers import Answered, AnswerObserver

CLUSTER = web.AppKey("cluster_member", ClusterMember)


class _Served(AnswerObserver):
    """Counts the questions this replica answered (`/v1/cluster`, the heartbeat)."""

    def __init__(self, app: web.Application) -> None:
        self.app = app

    def answered(self, event: Answered) -> None:
        member = self.app.get(CLUSTER)
        if member is not None:
            member.served += 1


def install_cluster(app: web.Application, holder: RuntimeHolder, observers: list[AnswerObserver]) -> None:
    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        settings = holder.current.config.app.cluster  # read at start: changing it needs a restart
        member = build_member(holder, holder.current.config.app) if settings.enabled else None
        if member is not None:
            app[CLUSTER] = member
            await member.start()
        yield
        if member is not None:
            await member.stop()

    async def cluster(request: web.Request) -> web.Response:
        require(authenticate(request, holder.current.config.app.auth), Role.ADMIN)
        member = request.app.get(CLUSTER)
        if member is None:
            return web.json_response(ClusterResponse(enabled=False).dump())
        replicas = [ReplicaView.model_validate(r) for r in await member.replicas()]
        hashes: dict[str, int] = {}
        for replica in replicas:
            hashes[str(replica.config_hash)] = hashes.get(str(replica.config_hash), 0) + 1
        body = ClusterResponse(
            enabled=True,
            replica=member.name,
            backend=member.bus.backend,
            bus=member.health()["bus"],
            replicas=replicas,
            config_hashes=hashes,
            consistent=len(hashes) == 1,
        )
        return web.json_response(body.dump())

    observers.append(_Served(app))
    app.cleanup_ctx.append(lifecycle)
    app.router.add_get("/v1/cluster", cluster)
