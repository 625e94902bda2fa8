"""Thread pools whose threads carry their names to the operating system.

Python 3.11 names its threads for itself only: `top -H`, `ps -L` and /proc/PID/task/*/comm show every
thread of the server as "python", so the CPU of the search, the scoring, the encoder lanes and the log
could not be told apart from outside (scripts/bench_scale.py reads them per name). Where the C library has
`prctl` (Linux) each pool thread sets its kernel name (15 bytes at most) when it starts; elsewhere nothing
changes."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .libc import libc_function

_PR_SET_NAME = 15
OS_NAME_BYTES = 15  # the kernel keeps 16 bytes with the terminating NUL
_PRCTL_ARGS = (ctypes.c_int, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)


def name_os_thread() -> bool:
    """Give the calling thread's name to the OS; False where that cannot be done (no `prctl`: not Linux).
    Never the main thread's: its kernel name is the process's name in `ps` and `top`."""
    prctl = libc_function("prctl", _PRCTL_ARGS, ctypes.c_int)
    if prctl is None or threading.current_thread() is threading.main_thread():
        return False
    text = threading.current_thread().name.encode("utf-8", "replace")[:OS_NAME_BYTES]
    return prctl(_PR_SET_NAME, text, 0, 0, 0) == 0


class NamedPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose threads name themselves to the OS before `initializer` runs."""

    def __init__(
        self,
        max_workers: int | None = None,
        thread_name_prefix: str = "",
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
    ) -> None:
        super().__init__(max_workers, thread_name_prefix, _named(initializer), initargs)


def _named(initializer: Callable[..., object] | None) -> Callable[..., None]:
    def start(*args: Any) -> None:
        name_os_thread()
        if initializer is not None:
            initializer(*args)

    return start
