"""`GET /openapi.json` (the contract, generated from the wire models) and `/docs`, a readable page over it
that works offline: a small self-written HTML+JS page, no CDN and no downloaded bundle, under the
dashboard's Content-Security-Policy. Both are public: they describe the API, they hold no data."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from ..api.openapi import build_openapi
from .dashboard_routes import SECURITY_HEADERS

DOCS_DIR = Path(__file__).parent / "docs"
ASSETS = {"docs.css": "text/css", "docs.js": "text/javascript"}


def install_docs(app: web.Application, keys: Callable[[], bool]) -> None:
    """`keys`: whether the config serving now has API keys (a reload may add or remove them)."""
    built: dict[bool, bytes] = {}  # per keys or none, built on the first request (not on the way to /health)

    async def openapi(request: web.Request) -> web.Response:
        with_keys = keys()
        if with_keys not in built:
            built[with_keys] = json.dumps(build_openapi(with_keys), separators=(",", ":")).encode()
        return web.Response(
            body=built[with_keys], content_type="application/json", headers={"Cache-Control": "no-cache"}
        )

    async def page(request: web.Request) -> web.Response:
        return web.Response(
            body=(DOCS_DIR / "index.html").read_bytes(),
            content_type="text/html",
            charset="utf-8",
            headers=SECURITY_HEADERS,
        )

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ASSETS:
            raise web.HTTPNotFound()
        return web.Response(
            body=(DOCS_DIR / name).read_bytes(),
            content_type=ASSETS[name],
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    app.router.add_get("/openapi.json", openapi)
    app.router.add_get("/docs", page)
    app.router.add_get("/docs/assets/{name}", asset)
