"""Ports on loopback, and skip-or-fail for tests that need a server: skip with an install hint locally,
fail on CI (CI=true)."""

from __future__ import annotations

import os
import socket
from typing import NoReturn


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(what: str, install: str) -> NoReturn:
    """A needed server or package is not there: fail on CI, skip elsewhere with what to install."""
    import pytest  # dev-only, and only meaningful inside a test run

    message = f"{what} is not available; {install}"
    if on_ci():
        pytest.fail(message + " (CI=true: tests that need servers must not skip)", pytrace=False)
    pytest.skip(message)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A port nothing listens on (for connection-refused tests and for servers started on it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
