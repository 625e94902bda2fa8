"""A small JSON API on loopback for the http adapter's tests: books, a search endpoint, failure modes,
and a log of every request exactly as the server received it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from .loopback import serving

EXAMPLES = Path(__file__).resolve().parents[2] / "templates"
BOOKS = json.loads((EXAMPLES / "books" / "books.json").read_text(encoding="utf-8"))


@dataclass
class Received:
    method: str
    raw_path: str
    match: dict[str, str]
    query: list[tuple[str, str]]
    json: Any
    headers: dict[str, str]


@dataclass
class HttpApi:
    url: str
    log: list[Received] = field(default_factory=list)
    failures: dict[str, list[int]] = field(default_factory=dict)  # path -> statuses to answer first
    required_headers: dict[str, str] = field(default_factory=dict)
    slow_seconds: float = 0.0

    def last(self) -> Received:
        return self.log[-1]


def create_app(state: HttpApi) -> web.Application:
    @web.middleware
    async def record(request: web.Request, handler):
        body = await request.json() if request.can_read_body else None
        state.log.append(
            Received(
                request.method,
                request.raw_path,
                dict(request.match_info),
                list(request.query.items()),
                body,
                dict(request.headers),
            )
        )
        for name, value in state.required_headers.items():
            if request.headers.get(name) != value:
                return web.json_response({"error": "unauthorized"}, status=401)
        queued = state.failures.get(request.path)
        if queued:
            status = queued.pop(0)
            return web.json_response({"error": "try later"}, status=status, headers={"Retry-After": "0"})
        if state.slow_seconds:
            await asyncio.sleep(state.slow_seconds)
        return await handler(request)

    async def list_books(request: web.Request) -> web.Response:
        author = request.query.get("author")
        genres = request.query.getall("genre", [])
        found = [b for b in BOOKS if (author is None or b["author"] == author) and (not genres or b["genre"] in genres)]
        limit = int(request.query.get("limit", "100"))
        return web.json_response({"data": {"items": found[:limit]}, "total": len(found)})

    async def one_book(request: web.Request) -> web.Response:
        book = next((b for b in BOOKS if b["isbn"] == request.match_info["isbn"]), None)
        if book is None:
            return web.json_response({"error": "no such book"}, status=404)
        return web.json_response({"book": book})

    async def search(request: web.Request) -> web.Response:
        query = await request.json()
        found = [b for b in BOOKS if b["genre"] == query.get("genre") and b["pages"] <= query.get("max_pages", 10**9)]
        return web.json_response({"results": found})

    async def echo(request: web.Request) -> web.Response:
        return web.json_response(
            {"items": [{"segment": request.match_info["segment"], "query": [list(p) for p in request.query.items()]}]}
        )

    async def html(_request: web.Request) -> web.Response:
        return web.Response(text="<html>maintenance</html>", content_type="text/html")

    app = web.Application(middlewares=[record])
    app.router.add_get("/api/books", list_books)
    app.router.add_get("/api/books/{isbn}", one_book)
    app.router.add_post("/api/books/search", search)
    app.router.add_get("/api/echo/{segment:[^/]+}", echo)
    app.router.add_post("/api/echo/{segment:[^/]+}", echo)
    app.router.add_get("/api/html", html)
    return app


@asynccontextmanager
async def running_http_api() -> AsyncIterator[HttpApi]:
    state = HttpApi(url="")
    async with serving(create_app(state), max_line_size=65536) as url:
        state.url = url
        yield state
