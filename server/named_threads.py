"""Thread pools whose threads carry their names to the operating system.

Python 3.11 names its threads for itself only: `top -H`, `ps -L` and /proc/PID/task/*/comm show every
thread of the server as "python", so the CPU of the search, the scoring, the encoder lanes and the log
could not be told apart from outside (scripts/bench_scale.py reads them per name). Where the C library has
`prctl` (Linux) each pool thread sets its kernel name (15 bytes at most) when it starts; elsewhere nothing
changes.

A pool can also lower its threads' scheduling priority (`nice`): on Linux a thread's nice value is its own.
The encoder's threads run at ENCODER_NICE and intent-model refits at REFIT_NICE, so that when the cores are
short the work that finishes a question already encoded (search, scoring, the answer) goes first."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .libc import libc_function

_PR_SET_NAME = 15
OS_NAME_BYTES = 15  # the kernel keeps 16 bytes with the terminating NUL
_PRCTL_ARGS = (ctypes.c_int, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
# Under 8 closed-loop clients at 1,000 templates, encoder threads at nice 5 answered about 8% more questions a
# second (docs/benchmarks.md): a question's search and scoring no longer wait behind the next encoder pass, so
# it is answered sooner and the encoder's queue refills sooner. Alone on the cores a nice value changes nothing.
ENCODER_NICE = 5
REFIT_NICE = 10  # a background refit yields to the encoder too


def name_os_thread() -> bool:
    """Give the calling thread's name to the OS; False where that cannot be done (no `prctl`: not Linux).
    Never the main thread's: its kernel name is the process's name in `ps` and `top`."""
    prctl = libc_function("prctl", _PRCTL_ARGS, ctypes.c_int)
    if prctl is None or threading.current_thread() is threading.main_thread():
        return False
    text = threading.current_thread().name.encode("utf-8", "replace")[:OS_NAME_BYTES]
    return prctl(_PR_SET_NAME, text, 0, 0, 0) == 0


def lower_thread_priority(nice: int) -> bool:
    """Raise the calling thread's nice value to `nice` (never lower it: that needs privileges); False where
    threads have no priority of their own to set (not Linux)."""
    if not sys.platform.startswith("linux"):  # elsewhere a thread id given as a process id names a process
        return False
    with contextlib.suppress(OSError):
        thread = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, thread) < nice:
            os.setpriority(os.PRIO_PROCESS, thread, nice)
        return True
    return False


class NamedPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose threads name themselves to the OS, and take the nice value `nice` when it
    is above 0, before `initializer` runs."""

    def __init__(
        self,
        max_workers: int | None = None,
        thread_name_prefix: str = "",
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),
        nice: int = 0,
    ) -> None:
        super().__init__(max_workers, thread_name_prefix, _named(initializer, nice), initargs)


def _named(initializer: Callable[..., object] | None, nice: int) -> Callable[..., None]:
    def start(*args: Any) -> None:
        name_os_thread()
        if nice > 0:
            lower_thread_priority(nice)
        if initializer is not None:
            initializer(*args)

    return start
