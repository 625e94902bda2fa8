"""Serve HTTP: refuse a non-loopback bind without API keys, say where we listen; optionally as N
pre-forked worker processes sharing the port (SO_REUSEPORT), each with its own model and runtime."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from pathlib import Path

from aiohttp import web

from ..auth import is_loopback, missing_key_envs
from ..embedding.lanes import set_worker_count
from ..mcp.http import MCP
from ..runtime.heap import SETTLE_AFTER_START, settle
from ..runtime.holder import RuntimeHolder
from ..runtime.loader import load_app_settings
from ..runtime.watcher import attach_watcher
from ..web.app import create_app
from ..web.slow_clients import GuardedAppRunner, read_timeouts
from .failures import report

log = logging.getLogger("intent_router.serve")


def serve(config: Path, host: str | None, port: int | None, workers: int = 1, watch: bool = True) -> int:
    app_settings = load_app_settings(config)  # auth and address checks before anything is built
    settings = app_settings.server
    host = host or settings.host
    port = settings.port if port is None else port
    auth = app_settings.auth
    if not auth.enabled and not is_loopback(host):
        print(
            f"refusing to listen on {host}: no API keys are configured (auth.client_keys / auth.admin_key_env). "
            "Configure keys, or listen on 127.0.0.1.",
            file=sys.stderr,
        )
        return 2
    missing = missing_key_envs(auth)
    if missing:
        print(f"refusing to start: API key variables are not set: {', '.join(missing)}", file=sys.stderr)
        return 2
    if not auth.enabled:
        log.warning("no API keys configured: serving without authentication, on loopback only (%s)", host)
    if workers < 1:
        print("--workers must be at least 1", file=sys.stderr)
        return 2
    if workers == 1:
        return _single(config, host, port, watch)
    if not hasattr(socket, "SO_REUSEPORT"):
        print("--workers needs SO_REUSEPORT, which this platform does not have", file=sys.stderr)
        return 2
    if port == 0:
        print("--workers needs a fixed port (with port 0 every worker would listen on its own)", file=sys.stderr)
        return 2
    if app_settings.sessions.backend == "memory":
        log.warning(
            "%d workers with sessions.backend: memory: each worker keeps its own conversations, so a follow-up "
            "that lands in another worker starts over; use sessions.backend: redis to share them",
            workers,
        )
    set_worker_count(workers)  # before forking: each worker's encoder lanes take its share of the cores
    return _prefork(config, host, port, workers, watch)


def _prefork(config: Path, host: str, port: int, workers: int, watch: bool = True) -> int:
    """Fork the workers before anything is loaded (no model, no threads of ours yet), each binding
    the same port with SO_REUSEPORT so the kernel spreads connections over them. SIGTERM or SIGINT
    to this parent stops every worker gracefully; a worker that exits stops the others."""
    status = 0
    stopping = False
    remaining: set[int] = set()

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True
        for child in remaining:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)

    # installed before forking (a signal in between must not orphan a worker); workers replace them
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            _worker(config, host, port, watch)  # never returns
        remaining.add(pid)
    log.info("started %d workers on %s:%d: pids %s", workers, host, port, " ".join(map(str, sorted(remaining))))
    while remaining:
        try:
            pid, code = os.wait()
        except ChildProcessError:
            break
        remaining.discard(pid)
        exit_code = os.waitstatus_to_exitcode(code)
        if not stopping:
            log.error("worker %d exited (%d); stopping the others", pid, exit_code)
            status = exit_code or 1
            stop()
    return status


def _single(config: Path, host: str, port: int, watch: bool = True) -> int:
    """One process: SIGTERM (a service manager's stop, handled in `_serve`) and Ctrl-C both close the
    server cleanly, and either ends with exit status 0 and no traceback."""
    try:
        asyncio.run(_serve(config, host, port, watch=watch))
    except KeyboardInterrupt:  # asyncio.run cancelled the server on Ctrl-C; its cleanup has run
        log.info("stopped (pid %d)", os.getpid())
    return 0


def _worker(config: Path, host: str, port: int, watch: bool = True) -> None:
    """One worker: SIGTERM stops it like Ctrl-C (the server closes cleanly); SIGINT is left to the
    parent, which forwards one SIGTERM (a terminal's Ctrl-C reaches the whole process group)."""

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = 0
    try:
        asyncio.run(_serve(config, host, port, reuse_port=True, watch=watch))
    except KeyboardInterrupt:
        pass
    except BaseException as exc:
        reported = report(exc)
        if reported is None:  # not a failure a message lets the user fix: the traceback is for a bug report
            log.exception("worker %d failed", os.getpid())
        code = 1
    finally:
        logging.shutdown()
        os._exit(code)


async def _serve(config: Path, host: str, port: int, reuse_port: bool = False, watch: bool = True) -> None:
    holder = RuntimeHolder(config)
    holder.listen_host = host  # reloads keep the start's auth rules for this address
    runtime = await holder.start()
    app = create_app(holder)
    if reuse_port:  # several workers share the port: an MCP session could not follow its client
        app[MCP].several_workers = True
    if watch:
        attach_watcher(app, holder)  # reload when config or template files change
    runner = GuardedAppRunner(app, lambda: read_timeouts(holder), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None)
    await site.start()
    log.info(
        "Intent Router listening on http://%s:%d (%d adapters, started in %.2f s, pid %d)",
        host,
        port,
        len(runtime.adapters),
        runtime.build_seconds,
        os.getpid(),
    )
    loop = asyncio.get_running_loop()
    loop.call_later(SETTLE_AFTER_START, _settle_heap, "start")
    holder.retired_listeners.append(lambda: _settle_heap("a replaced config closed"))
    stop = asyncio.Event()
    # SIGTERM ends the wait below, so the cleanup runs in order (the routing log writes what it holds);
    # a KeyboardInterrupt raised from a signal handler could land inside any task instead
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await holder.close()


def _settle_heap(after: str) -> None:
    settled = settle()
    log.info(
        "heap settled after %s in %.2f s: %d unreachable objects collected, %d kept out of the collector's sight",
        after,
        settled.seconds,
        settled.collected,
        settled.frozen,
    )
