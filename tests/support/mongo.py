"""A MongoDB wire-protocol server on loopback for tests: SecantusDB in-process, in memory."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from .servers import missing

CARS = [
    {"make": "Toyota", "model": "Corolla", "year": 2019, "price": 14500, "fuel": "petrol", "km": 62000},
    {"make": "Toyota", "model": "Prius", "year": 2021, "price": 21900, "fuel": "hybrid", "km": 30500},
    {"make": "Ford", "model": "Focus", "year": 2017, "price": 9800, "fuel": "petrol", "km": 98000},
    {"make": "Ford", "model": "Kuga", "year": 2022, "price": 27400, "fuel": "diesel", "km": 18000},
    {"make": "Volkswagen", "model": "Golf", "year": 2020, "price": 17900, "fuel": "petrol", "km": 45000},
    {"make": "Volkswagen", "model": "ID.3", "year": 2023, "price": 31900, "fuel": "electric", "km": 6000},
    {"make": "Tesla", "model": "Model 3", "year": 2022, "price": 35900, "fuel": "electric", "km": 21000},
]


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
