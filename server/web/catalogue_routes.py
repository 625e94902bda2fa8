"""`GET /v1/templates[?adapter=]`: the template catalogue, limited to what the caller's key may query."""

from __future__ import annotations

from aiohttp import web

from ..auth import authenticate, require
from ..runtime.holder import RuntimeHolder
from ..service.catalogue import build_catalogue


def install_catalogue(app: web.Application, holder: RuntimeHolder) -> None:
    async def templates(request: web.Request) -> web.Response:
        runtime = holder.current
        principal = authenticate(request, runtime.config.app.auth)
        require(principal, "client")
        catalogue = build_catalogue(runtime, principal.may_query, request.query.get("adapter") or None)
        return web.json_response(catalogue.model_dump(mode="json"))

    app.router.add_get("/v1/templates", templates)
