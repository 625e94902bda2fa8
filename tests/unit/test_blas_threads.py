"""fit-thresholds routes its chunks with one BLAS thread and puts the count back after."""

from __future__ import annotations

import numpy as np
import pytest

from server.routing.blas_threads import blas_threads, one_blas_thread


def test_one_thread_inside_the_block_and_the_count_restored_after():
    found = blas_threads()
    if found is None:
        pytest.skip("numpy here does not use OpenBLAS")
    get, put = found
    before = get()
    put(2)  # as on a two-core machine, whatever this one has
    try:
        with one_blas_thread():
            assert get() == 1
            a = np.ones((256, 256), np.float32)
            assert float((a @ a)[0, 0]) == 256.0  # products still work
        assert get() == 2
        with pytest.raises(RuntimeError), one_blas_thread():  # also when the routing raises
            raise RuntimeError("routing failed")
        assert get() == 2
    finally:
        put(before)


def test_found_in_this_environment():
    """numpy's wheels bundle OpenBLAS: if this stops finding it, fit-thresholds silently loses the setting."""
    config = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    if "openblas" not in str(config.get("name", "")).lower():
        pytest.skip("numpy here is not built with OpenBLAS")
    assert blas_threads() is not None
