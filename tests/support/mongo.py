"""A MongoDB wire-protocol server on loopback for tests: SecantusDB in-process, in memory."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .servers import missing

EXAMPLES = Path(__file__).resolve().parents[2] / "templates"
CARS = json.loads((EXAMPLES / "cars" / "cars.json").read_text(encoding="utf-8"))


@dataclass
class MongoServer:
    url: str
    port: int
    database: str


def start_secantus():
    try:
        from secantus import SecantusDBServer
    except ImportError:
        missing("SecantusDB (a MongoDB wire-protocol server)", "pip install -r requirements-dev.txt")
    server = SecantusDBServer(host="127.0.0.1", port=0, storage_path=":memory:", replica_set_name=None)
    server.start()
    return server


def seed_cars(url: str, database: str) -> None:
    from pymongo import MongoClient

    with MongoClient(url, serverSelectionTimeoutMS=3000) as client:
        coll = client[database]["cars"]
        coll.delete_many({})
        coll.insert_many([dict(c) for c in CARS])


@pytest.fixture(scope="session")
def mongo_server() -> Iterator[MongoServer]:
    server = start_secantus()
    url = f"mongodb://127.0.0.1:{server.port}/?directConnection=true"
    database = f"ir_test_{uuid.uuid4().hex[:8]}"
    seed_cars(url, database)
    try:
        yield MongoServer(url=url, port=server.port, database=database)
    finally:
        server.stop()
