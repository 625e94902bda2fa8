"""Pool threads carry their names to the OS (what `top -H` and /proc/PID/task/*/comm show), cut to the
kernel's 15 bytes, with the pool's own initializer still run; the main thread keeps the process's name. A
pool's `nice` lowers its own threads' priority only."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from server.named_threads import ENCODER_NICE, NamedPool, lower_thread_priority, name_os_thread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kernel thread names: Linux")


def os_name(native_id: int) -> str:
    return Path(f"/proc/self/task/{native_id}/comm").read_text().strip()


def test_a_pool_thread_has_its_name_in_the_kernel_and_its_initializer_runs() -> None:
    seen: list[str] = []
    with NamedPool(1, thread_name_prefix="probe-pool", initializer=seen.append, initargs=("started",)) as pool:
        native = pool.submit(threading.get_native_id).result(5)
        assert os_name(native) == "probe-pool_0"
    assert seen == ["started"]


def test_a_long_name_is_cut_to_fifteen_bytes() -> None:
    with NamedPool(1, thread_name_prefix="router-scoring-and-more") as pool:
        native = pool.submit(threading.get_native_id).result(5)
        assert os_name(native) == "router-scoring-"


def test_the_main_thread_keeps_the_process_name() -> None:
    before = os_name(threading.get_native_id())
    assert name_os_thread() is False
    assert os_name(threading.get_native_id()) == before


def test_a_pool_with_a_nice_value_runs_its_threads_at_it_and_others_keep_the_process_priority() -> None:
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    if own >= 19:
        pytest.skip("the test process already runs at the lowest priority")
    lower = min(own + 5, 19)
    with NamedPool(1, thread_name_prefix="probe-niced", nice=lower) as niced, NamedPool(1) as plain:
        assert niced.submit(lambda: os.getpriority(os.PRIO_PROCESS, 0)).result(5) == lower
        assert plain.submit(lambda: os.getpriority(os.PRIO_PROCESS, 0)).result(5) == own


def test_a_thread_already_below_the_asked_priority_stays_there() -> None:
    def twice() -> int:
        assert lower_thread_priority(ENCODER_NICE + 2)
        assert lower_thread_priority(ENCODER_NICE)  # lowering the nice value back would need privileges
        return os.getpriority(os.PRIO_PROCESS, 0)

    with NamedPool(1) as pool:
        assert pool.submit(twice).result(5) >= ENCODER_NICE + 2
