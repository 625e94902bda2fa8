"""One BLAS thread while fit-thresholds routes (OpenBLAS, as numpy's wheels bundle it; elsewhere a no-op).

fit-thresholds routes a chunk of questions (numpy products on the event loop) while the encoder embeds
the next one on every core. OpenBLAS's own threads then compete with onnxruntime's for the same two
cores: one BLAS thread routed a chunk about 1.5x faster (wall). The count is process-wide, so it is
set only around the routing of a chunk, where the encoder (onnxruntime, no BLAS) is the only other
thread at work, and put back after. The library is found among the process's loaded ones (numpy's
bundled copy names its functions `scipy_openblas_*64_`, a system OpenBLAS `openblas_*`).
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np  # noqa: F401 - loads numpy's BLAS before it is looked for

log = logging.getLogger("intent_router.routing")

NAMES = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)


@cache
def blas_threads() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """(get, set) of the OpenBLAS thread count in this process, or None."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return None
    paths = dict.fromkeys(line.split()[-1] for line in lines if "openblas" in line.lower() and ".so" in line)
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in NAMES:
            get, put = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if get is not None and put is not None:
                get.argtypes, get.restype = [], ctypes.c_int
                put.argtypes, put.restype = [ctypes.c_int], None
                return get, put
    log.debug("no OpenBLAS loaded: BLAS threads left as they are")
    return None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS calls run on one thread inside the block (then on as many as before)."""
    found = blas_threads()
    if found is None:
        yield
        return
    get, put = found
    previous = get()
    put(1)
    try:
        yield
    finally:
        put(previous)
