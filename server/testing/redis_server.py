"""The Redis server the session tests use: 127.0.0.1:6379, started (as the README documents) when absent."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid

from .servers import missing, port_open

HOST, PORT = "127.0.0.1", 6379
URL = f"redis://{HOST}:{PORT}/0"
START = ["redis-server", "--daemonize", "yes", "--bind", HOST, "--port", str(PORT), "--save", "", "--appendonly", "no"]
WHAT = f"a Redis server on {HOST}:{PORT}"
INSTALL = "install it with `apt-get install redis-server` (the tests start it when it is installed)"


def ensure_redis() -> str:
    """The URL of a reachable Redis server; starts one with the README's command when none answers."""
    if port_open(HOST, PORT):
        return URL
    if shutil.which("redis-server") is None:
        missing(WHAT, INSTALL)
    subprocess.run(START, check=True, capture_output=True, timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if port_open(HOST, PORT):
            return URL
        time.sleep(0.05)
    missing(WHAT, "redis-server did not start listening")


def unique_prefix() -> str:
    """A key prefix of its own for one test run, so runs never see each other's sessions."""
    return f"intent-router-test:{uuid.uuid4().hex}:"
