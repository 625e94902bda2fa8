"""A GraphQL server on loopback (strawberry on aiohttp) for the graphql adapter's tests: flights and
airports, an echo field, a field that fails, and a log of every request body as received."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import strawberry
from aiohttp import web
from strawberry.aiohttp.views import GraphQLView

from .loopback import serving

EXAMPLES = Path(__file__).resolve().parents[2] / "templates"
_DATA = json.loads((EXAMPLES / "flights" / "flights.json").read_text(encoding="utf-8"))
FLIGHTS, AIRPORTS = _DATA["flights"], _DATA["airports"]


@strawberry.type
class Flight:
    number: str
    origin: str
    destination: str
    price: float
    airline: str


@strawberry.type
class Airport:
    code: str
    name: str


@strawberry.type
class Echo:
    text: str


@strawberry.type
class Query:
    @strawberry.field
    def flights(self, origin: str, max_price: float | None = None, limit: int = 50) -> list[Flight]:
        found = [f for f in FLIGHTS if f["origin"] == origin and (max_price is None or f["price"] <= max_price)]
        return [Flight(**f) for f in sorted(found, key=lambda f: f["price"])[:limit]]

    @strawberry.field
    def airport(self, code: str) -> Airport | None:
        return Airport(code=code, name=AIRPORTS[code]) if code in AIRPORTS else None

    @strawberry.field
    def echo(self, text: str) -> list[Echo]:
        return [Echo(text=text)]

    @strawberry.field
    def broken(self) -> list[Flight]:
        raise ValueError("database password is hunter2")  # a message that must never reach a client


@strawberry.type
class Mutation:
    @strawberry.mutation
    def delete_flight(self, number: str) -> bool:
        return False


schema = strawberry.Schema(query=Query, mutation=Mutation)


@dataclass
class GraphQLApi:
    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)


def create_app(state: GraphQLApi) -> web.Application:
    @web.middleware
    async def record(request: web.Request, handler):
        if request.method == "POST":
            state.received.append(json.loads(await request.text()))
        if state.failures:
            return web.json_response({"error": "busy"}, status=state.failures.pop(0), headers={"Retry-After": "0"})
        return await handler(request)

    app = web.Application(middlewares=[record])
    app.router.add_route("*", "/graphql", GraphQLView(schema=schema))
    return app


@asynccontextmanager
async def running_graphql_api() -> AsyncIterator[GraphQLApi]:
    state = GraphQLApi(url="")
    async with serving(create_app(state)) as url:
        state.url = url + "/graphql"
        yield state
