"""`run.py serve --workers 2`: two pre-forked processes share the port and both answer; SIGTERM to the
parent stops them all. Which worker accepted a connection is read from /proc (the process that owns
the connection's server-side socket), so no response has to carry a pid."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from server.testing.configs import people_tree

RUN = Path(__file__).resolve().parents[2] / "run.py"

pytestmark = pytest.mark.skipif(
    not hasattr(socket, "SO_REUSEPORT") or not Path("/proc/net/tcp").exists(),
    reason="needs Linux /proc and SO_REUSEPORT",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children_of(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def socket_inode(server_port: int, client_port: int) -> str | None:
    """The inode of the server side of the loopback connection (server_port <- client_port)."""
    want_local, want_remote = f"0100007F:{server_port:04X}", f"0100007F:{client_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        if cols[1] == want_local and cols[2] == want_remote:
            return cols[9]
    return None


def owner_of(inode: str, candidates: set[int]) -> int | None:
    target = f"socket:[{inode}]"
    for pid in candidates:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return pid
            except OSError:
                continue
    return None


def ask(port: int, path: str, payload: dict | None, workers: set[int]) -> tuple[int, dict, int | None]:
    """One request on a new connection; the answer and the worker that owns the connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        if payload is None:
            conn.request("GET", path)
        else:
            conn.request("POST", path, json.dumps(payload), {"Content-Type": "application/json"})
        reply = conn.getresponse()
        body = json.loads(reply.read())
        client_port = conn.sock.getsockname()[1]
        inode = socket_inode(port, client_port)  # the connection is still open: its socket is listed
        return reply.status, body, owner_of(inode, workers) if inode else None
    finally:
        conn.close()


def test_two_workers_share_the_port_and_both_answer(tmp_path):
    config_dir = people_tree(tmp_path)
    port = free_port()
    log = tmp_path / "server.log"  # a file, not a pipe: an undrained pipe would block the workers' logging
    with log.open("w") as err:  # the server keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, str(RUN), "--config", str(config_dir), "serve", "--port", str(port), "--workers", "2"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 120
        workers: set[int] = set()
        while len(workers) < 2 and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            workers = children_of(proc.pid)
            time.sleep(0.1)
        assert len(workers) == 2
        answered: dict[int, int] = {}
        while set(answered) != workers and time.monotonic() < deadline:
            try:
                status, body, pid = ask(port, "/v1/test_routing", {"query": "how many people work in sales?"}, workers)
            except OSError:  # a worker still loading: nobody listens yet
                time.sleep(0.2)
                continue
            assert status == 200, body
            assert body["routing_decision"]["selected_template"]
            if pid is not None:
                answered[pid] = answered.get(pid, 0) + 1
        assert set(answered) == workers, f"answers by worker: {answered}; server log: {log.read_text()[-3000:]}"
        assert all(ask(port, "/health", None, workers)[0] == 200 for _ in range(4))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
    stderr = log.read_text()
    assert code == 0, stderr
    assert len(re.findall(r"listening on http://127\.0\.0\.1:\d+ .*pid (\d+)", stderr)) == 2
    time.sleep(0.5)
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]  # the workers are gone too


def test_workers_need_a_fixed_port(tmp_path):
    config_dir = people_tree(tmp_path)
    done = subprocess.run(
        [sys.executable, str(RUN), "--config", str(config_dir), "serve", "--port", "0", "--workers", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "fixed port" in done.stderr


def test_a_worker_that_cannot_load_the_config_says_why_without_a_traceback(tmp_path):
    """The parent reads only the server settings before forking; the templates are loaded in each worker.
    A template file gone from under the config ends the worker, and then the server, with the file:line
    message `validate` gives, not a stack trace."""
    config_dir = people_tree(tmp_path)
    (tmp_path / "templates" / "people" / "people.yaml").unlink()
    done = subprocess.run(
        [sys.executable, str(RUN), "--config", str(config_dir), "serve", "--port", str(free_port()), "--workers", "2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "configuration errors (1):" in done.stderr and "people.yaml:" in done.stderr
    assert "no template file matches" in done.stderr
    assert "Traceback" not in done.stderr
