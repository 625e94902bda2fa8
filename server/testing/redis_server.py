"""The Redis server the session tests use: 127.0.0.1:6379, started when absent (as the README documents)."""

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


class PrivateRedis:
    """A Redis server of a test's own on another port (no persistence), which the test may stop and start
    again (the same port) to see what the server does while Redis is down."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://{HOST}:{port}/0"
        self._proc: subprocess.Popen | None = None

    def start(self) -> PrivateRedis:
        if shutil.which("redis-server") is None:
            missing(WHAT, INSTALL)
        command = ["redis-server", "--bind", HOST, "--port", str(self.port), "--save", "", "--appendonly", "no"]
        self._proc = subprocess.Popen([*command, "--daemonize", "no"], stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not port_open(HOST, self.port):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                self.stop()
                missing(f"a private Redis on port {self.port}", "redis-server did not start listening")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(10)
            self._proc = None
