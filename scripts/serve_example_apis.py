"""Serve the example books JSON API (127.0.0.1:8091) and flights GraphQL API (127.0.0.1:8092/graphql)
that the disabled `books` and `flights` example adapters point at, from the shipped example data.

These are the same small servers the test suite runs on loopback (server.testing); they need the
development requirements (strawberry-graphql). Usage: python scripts/serve_example_apis.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from server.testing import graphql_api, http_api
from server.testing.loopback import serving


async def serve(host: str, books_port: int, flights_port: int) -> None:
    books = http_api.create_app(http_api.HttpApi(url=""))
    flights = graphql_api.create_app(graphql_api.GraphQLApi(url=""))
    async with serving(books, host, books_port) as books_url, serving(flights, host, flights_port) as flights_url:
        print(f"books API: {books_url}/api/books   flights GraphQL: {flights_url}/graphql", flush=True)
        await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--books-port", type=int, default=8091)
    parser.add_argument("--flights-port", type=int, default=8092)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.books_port, args.flights_port))


if __name__ == "__main__":
    main()
