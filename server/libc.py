"""C library functions among the process's own symbols, looked up once and typed: glibc's `mallopt` and
`malloc_trim` for the heap (runtime/heap.py), `prctl` for thread names (named_threads.py)."""

from __future__ import annotations

import ctypes
import functools
from typing import Any


@functools.cache
def libc_function(name: str, argtypes: tuple[Any, ...], restype: Any) -> Any:
    """The function, typed, or None where the C library has no such symbol (another C library or system)."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = list(argtypes), restype
    return function
