"""Serve the example books JSON API (127.0.0.1:8091) and flights GraphQL API (127.0.0.1:8092/graphql)
that the disabled `books` and `flights` example adapters point at, from the shipped example data.

These are the same small servers the test suite runs on loopback (tests/support); they need the
development requirements (strawberry-graphql). Usage: python scripts/serve_example_apis.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from aiohttp import web

from tests.support import graphql_api, http_api


async def serve(host: str, books_port: int, flights_port: int) -> None:
    runners = []
    for app, port in (
        (http_api.create_app(http_api.HttpApi(url="")), books_port),
        (graphql_api.create_app(graphql_api.GraphQLApi(url="")), flights_port),
    ):
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        runners.append(runner)
    print(
        f"books API: http://{host}:{books_port}/api/books   flights GraphQL: http://{host}:{flights_port}/graphql",
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        for runner in runners:
            await runner.cleanup()


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
