"""Waiting in a test for something the server does in the background (a reload, a start)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable


async def eventually(check: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0) -> None:
    """Poll `check()` (plain or async) until it holds, or AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        held = check()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout:g} s")
        await asyncio.sleep(0.02)
