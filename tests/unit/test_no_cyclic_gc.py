"""fit-thresholds routes each chunk with the cyclic collector off and turns it back on after."""

from __future__ import annotations

import gc

import pytest

from server.runtime.heap import no_cyclic_gc


def test_off_inside_on_after_also_when_routing_raises():
    assert gc.isenabled()
    with no_cyclic_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), no_cyclic_gc():
        raise RuntimeError("routing failed")
    assert gc.isenabled()


def test_left_off_when_the_caller_had_it_off():
    gc.disable()
    try:
        with no_cyclic_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
