"""The real app on a loopback port, served from its own event loop in a background thread, for
synchronous clients (schemathesis, requests) that block the thread they run in."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from server.runtime.holder import RuntimeHolder
from server.web.app import create_app

from .loopback import serving


@contextmanager
def app_in_thread(config_dir: Path, start_timeout: float = 120.0) -> Iterator[str]:
    """Yields the base URL while the app serves; stops it and closes the runtime on exit."""
    loop = asyncio.new_event_loop()
    ready: dict[str, str | BaseException] = {}
    started = threading.Event()
    stop = asyncio.Event()

    async def main() -> None:
        holder = RuntimeHolder(config_dir)
        try:
            await holder.start()
            async with serving(create_app(holder)) as url:
                ready["url"] = url
                started.set()
                await stop.wait()
        except BaseException as exc:  # reported to the waiting test below
            ready["error"] = exc
            started.set()
        finally:
            await holder.close()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), name="app-in-thread", daemon=True)
    thread.start()
    try:
        if not started.wait(start_timeout):
            raise TimeoutError(f"the app did not start within {start_timeout:g} s")
        if "error" in ready:
            raise RuntimeError("the app failed to start") from ready["error"]  # type: ignore[misc]
        yield str(ready["url"])
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
        loop.close()
