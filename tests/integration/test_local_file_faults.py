"""A fault in the server's own SQLite files never takes it down (issue 31): a real `serve` process (and
`serve --workers 2`, whose workers share the files) keeps answering while the routing log's `-shm` and its
other files are truncated under it, reports the log failing in /health while its files refuse writes
(immutable), and writes again once they are writable; the embedding cache's files, likewise, while a reload
embeds new template texts. With WAL, the first query (or reload) after a `-shm` was truncated or made
immutable killed the process with SIGBUS."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiohttp
import pytest
import sqlalchemy as sa

from server.stats.schema import make_engine
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.file_faults import can_freeze, frozen, truncate
from server.testing.polling import eventually
from server.testing.server_process import ServerProcess, serving

QUESTION = {"query": "how many people work in each department?", "adapter": "people"}
CONFIG = BASE_CONFIG + "stats: {flush_interval: 0.05}\nresult_cache: {enabled: false}\n"
LOG = "routing_log.sqlite3"
CACHE = "embedding_cache.sqlite3"


class Client:
    """Questions and /health against the process, each asserting that it is still there."""

    def __init__(self, server: ServerProcess, http: aiohttp.ClientSession) -> None:
        self.server, self.http = server, http
        self.answered = 0

    async def ask(self, times: int = 4) -> None:
        for _ in range(times):
            assert self.server.alive(), self.server.why_dead()
            async with self.http.post(self.server.url + "/v1/query", json=QUESTION) as resp:
                assert resp.status == 200, await resp.text()
            self.answered += 1

    async def log_health(self) -> dict:
        assert self.server.alive(), self.server.why_dead()
        async with self.http.get(self.server.url + "/health") as resp:
            assert resp.status == 200
            return (await resp.json())["routing_log"]

    async def log_reads(self, want: str, times: int = 3) -> bool:
        """After more questions, `times` /health answers in a row (any worker's) say the log is `want`."""
        await self.ask()
        return all([(await self.log_health())["status"] == want for _ in range(times)])


@pytest.mark.parametrize("workers", [1, 2])
async def test_the_logs_file_faults_never_stop_the_answers(tmp_path, workers):
    config = people_tree(tmp_path, CONFIG)
    data = tmp_path / "data"
    connections = aiohttp.TCPConnector(force_close=True)  # a connection per request: any worker may take it
    async with (
        serving(tmp_path, config, "--workers", str(workers)) as server,
        aiohttp.ClientSession(connector=connections) as http,
    ):
        client = Client(server, http)

        async def written() -> int:
            await client.ask()
            return int((await client.log_health())["written"])

        await eventually(lambda: written_above(written, 0), 60)

        # 1. truncated under the server: the -shm (what killed it) and every other file of the log
        for path in [data / f"{LOG}-shm", *data.glob(f"{LOG}*")]:
            truncate(path)
        await eventually(lambda: client.log_reads("ok"), 60)  # answering, and written again (table re-made)
        before = await written()
        await eventually(lambda: written_above(written, before), 60)

        # 2. immutable: the log fails, the answers go on
        if not can_freeze():
            pytest.skip("no way to make a file refuse root's writes here (chattr +i)")
        with frozen(data / LOG):
            await eventually(lambda: client.log_reads("failing", times=1), 60)
            answered = client.answered
            await client.ask(20)
            assert client.answered == answered + 20

        # 3. writable again: the log recovers on its own
        await eventually(lambda: client.log_reads("ok"), 60)
        assert server.alive(), server.why_dead()


async def test_the_embedding_caches_file_faults_never_stop_the_server(tmp_path):
    config = people_tree(tmp_path, CONFIG)
    data, library = tmp_path / "data", tmp_path / "templates" / "people" / "people.yaml"
    async with serving(tmp_path, config) as server, aiohttp.ClientSession() as http:
        client = Client(server, http)

        examples = ["headcount per department"]

        async def reload_embedding(example: str) -> None:
            """A new example for a template: the reload embeds it and writes the vector to the cache file."""
            text = library.read_text()
            assert f'"{examples[-1]}"' in text
            library.write_text(text.replace(f'"{examples[-1]}"', f'"{example}"'))
            examples.append(example)
            assert server.alive(), server.why_dead()
            async with http.post(server.url + "/admin/reload") as resp:
                assert resp.status == 200, await resp.text()
            await client.ask()

        await client.ask()
        for path in [data / f"{CACHE}-shm", *data.glob(f"{CACHE}*")]:
            truncate(path)
        await reload_embedding("staff numbers by team")
        if not can_freeze():
            pytest.skip("no way to make a file refuse root's writes here (chattr +i)")
        with frozen(data / CACHE):
            await reload_embedding("how big is each team")
        await reload_embedding("team sizes please")
        assert server.alive(), server.why_dead()


async def written_above(written, floor: int) -> bool:
    return await written() > floor


def test_no_file_of_the_log_is_memory_mapped_and_an_old_wal_log_is_switched(tmp_path):
    """The design, checked on the engine itself: rollback journal (no -shm to map) and mmap off, also for a
    log file an older version left in WAL mode."""
    old = sqlite3.connect(tmp_path / LOG)
    assert old.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    old.execute("CREATE TABLE t (x)")
    old.close()
    engine = make_engine(f"sqlite:///{tmp_path / LOG}")
    with engine.connect() as conn:
        assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "delete"
        assert conn.execute(sa.text("PRAGMA mmap_size")).scalar() == 0
    engine.dispose()
    assert not Path(f"{tmp_path / LOG}-shm").exists()
