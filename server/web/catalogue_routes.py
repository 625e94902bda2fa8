"""`GET /v1/templates[?adapter=]`: the template catalogue, limited to what the caller's key may query."""

from __future__ import annotations

from aiohttp import web

from ..api.requests import CatalogueQuery
from ..auth import Role, authenticate, require
from ..runtime.holder import RuntimeHolder
from ..service.catalogue import build_catalogue
from .query_string import parse_query_string


def install_catalogue(app: web.Application, holder: RuntimeHolder) -> None:
    async def templates(request: web.Request) -> web.Response:
        runtime = holder.current
        principal = authenticate(request, runtime.config.app.auth)
        require(principal, Role.CLIENT)
        params = parse_query_string(CatalogueQuery, request.query)
        catalogue = build_catalogue(runtime, principal.may_query, params.adapter)
        return web.json_response(catalogue.model_dump(mode="json"))

    app.router.add_get("/v1/templates", templates)
