"""A real `run.py serve` process for tests that need one (signals, files shared by workers): started on a free
loopback port, its stderr in a file (an undrained pipe would block its logging), stopped on leaving."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from .polling import eventually
from .servers import free_port

RUN = Path(__file__).resolve().parents[2] / "run.py"


@dataclass
class ServerProcess:
    proc: subprocess.Popen
    url: str
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def why_dead(self) -> str:
        """Its exit code and the end of its log, for an assertion message."""
        return f"exit code {self.proc.poll()}; log:\n{self.log.read_text()[-3000:]}"


@contextlib.asynccontextmanager
async def serving(
    root: Path, config_dir: Path, *extra: str, ready_within: float = 120.0
) -> AsyncIterator[ServerProcess]:
    """`run.py --config config_dir serve` in `root` (its data/ folder), answering /health before it is yielded."""
    port = free_port()
    log = root / "server.log"
    with log.open("w") as err:  # the server keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, str(RUN), "--config", str(config_dir), "serve", "--port", str(port), *extra],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    server = ServerProcess(proc, f"http://127.0.0.1:{port}", log)
    try:
        async with aiohttp.ClientSession() as http:

            async def answers() -> bool:
                assert server.alive(), server.why_dead()
                try:
                    async with http.get(server.url + "/health") as resp:
                        return resp.status == 200
                except aiohttp.ClientError:
                    return False

            await eventually(answers, ready_within)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
