"""A MongoDB wire-protocol server on loopback for tests and benchmarks: SecantusDB in-process, in memory
(a development requirement, imported only when a server is started)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "templates"
CARS = json.loads((EXAMPLES / "cars" / "cars.json").read_text(encoding="utf-8"))
WHAT = "SecantusDB (a MongoDB wire-protocol server)"
INSTALL = "pip install -r requirements-dev.txt"


@dataclass
class MongoServer:
    url: str
    port: int
    database: str


def start_secantus() -> Any:
    """A started SecantusDB server on a free loopback port; ImportError without the dev requirements."""
    from secantus import SecantusDBServer

    server = SecantusDBServer(host="127.0.0.1", port=0, storage_path=":memory:", replica_set_name=None)
    server.start()
    return server


def seed_cars(url: str, database: str) -> None:
    from pymongo import MongoClient

    with MongoClient[dict[str, Any]](url, serverSelectionTimeoutMS=3000) as client:
        coll = client[database]["cars"]
        coll.delete_many({})
        coll.insert_many([dict(c) for c in CARS])


@contextmanager
def running_mongo(prefix: str = "ir_test") -> Iterator[MongoServer]:
    """SecantusDB on loopback with the example cars in a fresh database; stopped on exit."""
    server = start_secantus()
    try:
        url = f"mongodb://127.0.0.1:{server.port}/?directConnection=true"
        database = f"{prefix}_{uuid.uuid4().hex[:8]}"
        seed_cars(url, database)
        yield MongoServer(url=url, port=server.port, database=database)
    finally:
        server.stop()
